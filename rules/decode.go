package rules

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/flowgate/flowgate/flow"
)

// object walks one JSON object of the document: it reports unknown and
// repeated keys, and hands each known key's value to its reader. Every
// problem goes to p with the path of the object (index, id, prefix).
type object struct {
	p      *problems
	index  int    // rule index, or -1
	id     string // rule id, for messages
	prefix string // "" in a rule, "cluster." in its cluster block, "alerting." in that section
	given  map[string]bool
}

// fail reports a problem with field (a JSON key of this object).
func (o *object) fail(field, format string, args ...any) {
	if o.p.full() {
		return
	}
	o.p.add(&FieldError{Index: o.index, ID: o.id, Field: o.prefix + field, Msg: fmt.Sprintf(format, args...)})
}

// walk calls read for every known key of n, and reports unknown keys (with a
// suggestion when one is close) and keys given twice. It returns false when n
// is not an object, after reporting that under self.
func (o *object) walk(n *node, self string, keys []string, read func(key string, v *node)) bool {
	if n.kind != kindObject {
		o.p.add(&FieldError{Index: o.index, ID: o.id, Field: strings.TrimSuffix(o.prefix+self, "."), Msg: "must be an object, got " + describe(n)})
		return false
	}
	o.given = make(map[string]bool, min(len(n.members), len(keys)))
	for _, m := range n.members {
		if o.p.over {
			break // the document is refused; its problems are listed already
		}
		known := false
		for _, k := range keys {
			if k == m.key {
				known = true
				break
			}
		}
		switch {
		case !known:
			if s := suggest(m.key, keys); s != "" {
				o.fail(keyName(m.key), "unknown field (did you mean %q?)", s)
			} else {
				o.fail(keyName(m.key), "unknown field (known: %s)", strings.Join(keys, ", "))
			}
		case o.given[m.key]:
			o.fail(m.key, "given more than once")
		default:
			o.given[m.key] = true
			read(m.key, m.val)
		}
	}
	return true
}

// keyName shows an unknown key in a path: as it is when it looks like a
// field name, quoted (and cut short) when it is empty or odd.
func keyName(k string) string {
	plain := k != ""
	for _, r := range k {
		if !(r == '_' || r == '$' || r == '-' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			plain = false
			break
		}
	}
	if plain && len(k) <= 64 {
		return k
	}
	if len(k) > 64 {
		k = strings.ToValidUTF8(k[:64], "") + "..."
	}
	return strconv.Quote(k)
}

// required reports the keys of keys that were not given.
func (o *object) required(keys ...string) {
	for _, k := range keys {
		if !o.given[k] {
			o.fail(k, "required")
		}
	}
}

func (o *object) typeError(key string, want string, v *node) {
	o.fail(key, "must be %s, got %s", want, describe(v))
}

// describe names a wrong value for a type error: its type, and the value
// itself when it is short.
func describe(v *node) string {
	switch v.kind {
	case kindString:
		if len(v.text) <= 40 {
			return fmt.Sprintf("string %q", v.text)
		}
	case kindNumber:
		if len(v.text) <= 40 {
			return "number " + v.text
		}
	case kindBool:
		return fmt.Sprintf("boolean %t", v.boolean)
	}
	return v.kind.String()
}

func (o *object) str(key string, v *node) (string, bool) {
	if v.kind != kindString {
		o.typeError(key, "a string", v)
		return "", false
	}
	if v.badText {
		o.fail(key, "%q: not valid UTF-8 (invalid bytes or a lone \\u surrogate)", v.text)
		return "", false
	}
	return v.text, true
}

func (o *object) boolean(key string, v *node) (bool, bool) {
	if v.kind != kindBool {
		o.typeError(key, "true or false", v)
		return false, false
	}
	return v.boolean, true
}

// number reads a finite JSON number. JSON has no NaN or Inf; a literal too
// large for a float64 (1e400) is reported rather than read as +Inf.
func (o *object) number(key string, v *node) (float64, bool) {
	if v.kind != kindNumber {
		o.typeError(key, "a number", v)
		return 0, false
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		o.fail(key, "%s: out of range", v.text)
		return 0, false
	}
	return f, true
}

func (o *object) integer(key string, v *node) (int, bool) {
	return o.integerUpTo(key, v, flow.MaxCount)
}

// integerUpTo reads a whole number. One beyond flow.MaxCount (what an int
// of 32 bits holds) is refused here, naming most: the field's own bound
// when that is tighter (maxKeys: flow.MaxKeysLimit), so the message gives
// the bound that holds.
func (o *object) integerUpTo(key string, v *node, most float64) (int, bool) {
	f, ok := o.number(key, v)
	if !ok {
		return 0, false
	}
	if f != math.Trunc(f) {
		o.fail(key, "must be a whole number, got %s", v.text)
		return 0, false
	}
	if math.Abs(f) > flow.MaxCount {
		o.fail(key, "%s: out of range (at most %d)", v.text, int64(min(most, flow.MaxCount)))
		return 0, false
	}
	return int(f), true
}

// duration reads a Go duration string ("500ms", "1m30s"). Numbers are
// refused: a bare 10 could mean seconds or nanoseconds.
func (o *object) duration(key string, v *node) (time.Duration, bool) {
	return o.durationUpTo(key, v, math.MaxInt64)
}

// durationUpTo is duration for a value of at most most, which a message
// about a longer one names.
func (o *object) durationUpTo(key string, v *node, most time.Duration) (time.Duration, bool) {
	if v.kind != kindString {
		o.typeError(key, `a duration string such as "1s"`, v)
		return 0, false
	}
	d, err := parseDurationUpTo(v.text, most)
	if err != "" {
		o.fail(key, "%q: %s", v.text, err)
		return 0, false
	}
	if strings.HasPrefix(v.text, "-") { // even "-0s": no duration here is signed
		o.fail(key, "%q: must not be negative", v.text)
		return 0, false
	}
	if d > most {
		o.fail(key, "%q: out of range (at most %s)", v.text, hoursText(most))
		return 0, false
	}
	return d, true
}

// hoursText writes a bound as whole hours, "8784h", rounded down.
func hoursText(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
}

// parseDuration wraps time.ParseDuration with messages that say what to fix.
func parseDuration(s string) (time.Duration, string) { return parseDurationUpTo(s, math.MaxInt64) }

// parseDurationUpTo is parseDuration naming most as the bound an overflow
// passed.
func parseDurationUpTo(s string, most time.Duration) (time.Duration, string) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, ""
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "unknown unit"):
		// time: unknown unit "x" in duration "10x"
		u := msg[strings.Index(msg, "unit ")+5:]
		u = u[:strings.Index(u, " in duration")]
		return 0, "unknown unit " + u + " (valid: ns, us, ms, s, m, h)"
	case strings.Contains(msg, "missing unit"):
		return 0, "missing unit (valid: ns, us, ms, s, m, h)"
	case s == "":
		return 0, "empty duration"
	case looksNumeric(s):
		return 0, "out of range (at most " + hoursText(most) + ")"
	}
	return 0, "not a duration (examples: 500ms, 1s, 1m30s)"
}

// looksNumeric reports whether s has the shape of a duration (digits,
// points, units, a sign), so a parse failure can only be an overflow.
func looksNumeric(s string) bool {
	digits := false
	for _, r := range s {
		switch {
		case unicode.IsDigit(r):
			digits = true
		case strings.ContainsRune("+-.nsuµμmh", r):
		default:
			return false
		}
	}
	return digits
}

// suggest returns the key of keys closest to k (same letters ignoring case,
// or at most two edits away), or "".
func suggest(k string, keys []string) string {
	best, bestD := "", 3
	for _, c := range keys {
		if strings.EqualFold(k, c) {
			return c
		}
		if d := editDistance(strings.ToLower(k), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
