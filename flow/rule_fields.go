package flow

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// This file holds the shape of the one table of Rule's fields, whose rows
// are in rule_table.go: for each field, its name in the rules document, its
// kind, which algorithms and levels take it and why the others do not, its
// default and the checks of its value. WithDefaults and Validate walk it;
// package rules reads, checks and writes documents by it, and the Sentinel
// importer writes rules by it. Adding a field to Rule is adding a row
// (TestRuleFieldsCoverRule fails for a field without one).

// FieldKind is how a rule field is written in the rules document.
type FieldKind uint8

// The kinds of rule fields.
const (
	KindString   FieldKind = iota // a string
	KindEnum                      // one of a fixed set of names: level, algorithm, strategy
	KindAmount                    // a number of permits: finite, at most MaxAmount
	KindNumber                    // a finite number
	KindInt                       // a whole number
	KindDuration                  // a Go duration string ("500ms"), not negative
	KindBool                      // true or false
	KindList                      // an array of strings
	KindMap                       // an object of value: amount pairs
	KindObject                    // a nested object (cluster, reserve)
)

// Bounds every field of a kind obeys in the rules document, whatever its
// own range: beyond them a value is a typo or no longer exact.
const (
	// MaxAmount bounds a KindAmount: beyond it a float64 no longer counts
	// single permits exactly.
	MaxAmount = 1e15
	// MaxDuration bounds a KindDuration: anything longer than a year is a
	// typo (a missing unit prefix), not a limit anyone means.
	MaxDuration = 366 * 24 * time.Hour
	// MaxCount bounds a KindInt, so int conversions cannot overflow on
	// 32-bit platforms.
	MaxCount = 1 << 30
)

// RuleField describes one field of Rule as the rules document holds it.
type RuleField struct {
	// Name is the field's JSON name, which problems also use ("maxWait").
	Name string
	// Kind is how the document writes it.
	Kind FieldKind

	ptr    func(r *Rule) any // a pointer to the field in r
	algos  algoSet           // algorithms whose rules take it
	levels levelSet          // levels whose rules take it
	not    []notFor          // why the other algorithms do not; none: "only for <algos> rules"
	// unless rules the field out by other fields of the rule (maxWait by
	// refResource), saying why; nil or "": it does not.
	unless func(r *Rule) string
	// implied are the algorithms whose rules hold only the field's
	// default, so the document may not give it, and why.
	implied []notFor
	// required: the document must give it on the rules that take it.
	required bool
	// always: written by Format even when zero (a zero maxWait is a setting).
	always bool
	def    any         // the default where it applies and is zero; nil: none
	fill   func(*Rule) // a default that depends on other fields (burst = limit)
	// complete fills the defaults inside a value that is set (a cluster
	// spec's threshold and fallback); the field itself has no default.
	complete func(*Rule)
	// bounds: a value set (zero stands for the default) must lie in them.
	bounds *bounds
	// hi is the largest value of a field whose check bounds it without
	// bounds (maxKeys), for Max; 0: none.
	hi    float64
	check func(r *Rule, bad badFunc)
}

// bounds is the range of a number field's values: [lo, hi], or (lo, hi].
type bounds struct {
	lo, hi float64
	loOpen bool
}

func (b *bounds) hold(v float64) bool { return v <= b.hi && (v > b.lo || v == b.lo && !b.loOpen) }

// String writes the range as problems show it: "[1, 3600]", "(0, 1]".
func (b *bounds) String() string {
	open := "["
	if b.loOpen {
		open = "("
	}
	return open + strconv.FormatFloat(b.lo, 'f', -1, 64) + ", " + strconv.FormatFloat(b.hi, 'f', -1, 64) + "]"
}

// Bounds returns the range a value of the field must lie in when set,
// as "[lo, hi]" or "(lo, hi]", or "" when the field has none of its own
// (its checks may still refuse values, and its kind bounds it).
func (f *RuleField) Bounds() string {
	if f.bounds == nil {
		return ""
	}
	return f.bounds.String()
}

// Max is the largest value the field takes: its own bound (buckets 3600,
// maxKeys MaxKeysLimit) or else its kind's (MaxAmount, MaxCount, or
// MaxDuration in nanoseconds); +Inf for a kind without one. A reader that
// refuses a value before the rule's checks see it (package rules, for a
// number too large for an int) names this bound.
func (f *RuleField) Max() float64 {
	switch {
	case f.bounds != nil:
		return f.bounds.hi
	case f.hi != 0:
		return f.hi
	}
	switch f.Kind {
	case KindAmount:
		return MaxAmount
	case KindInt:
		return MaxCount
	case KindDuration:
		return float64(MaxDuration)
	}
	return math.Inf(1)
}

// checkKind reports a value beyond its kind's bound (MaxCount,
// MaxDuration): the rules document refuses such values as it reads them,
// and a rule built in Go or sent inline to the token server is held to the
// same. Amounts, and fields with a bound of their own, are bounded by
// their own checks, which name that bound.
func (f *RuleField) checkKind(r *Rule, bad badFunc) {
	if f.bounds != nil || f.hi != 0 {
		return
	}
	switch p := f.ptr(r).(type) {
	case *int:
		if *p > MaxCount || *p < -MaxCount {
			bad(f.Name, "must be at most %d in magnitude (flow.MaxCount), not %d", MaxCount, *p)
		}
	case *time.Duration:
		if *p > MaxDuration {
			bad(f.Name, "must be at most %s (flow.MaxDuration), not %v", hoursText(MaxDuration), *p)
		}
	}
}

// checkBounds reports a set value of a number field outside its bounds.
func (f *RuleField) checkBounds(r *Rule, bad badFunc) {
	var v float64
	var shown any
	switch p := f.ptr(r).(type) {
	case *int:
		v, shown = float64(*p), *p
	case *float64:
		v, shown = *p, *p
	default:
		panic("flow: rule field " + f.Name + " has bounds but is not a number")
	}
	if v != 0 && !f.bounds.hold(v) { // NaN fails hold
		bad(f.Name, "must be in %v, not %v", f.bounds, shown)
	}
}

// badFunc reports one problem of a field.
type badFunc func(field, format string, args ...any)

// notFor says why the rules of some algorithms do not take a field: msg,
// where %v is the rule's algorithm.
type notFor struct {
	algos algoSet
	msg   string
}

// algoSet and levelSet are sets of algorithms and levels, one bit each.
type (
	algoSet  uint32
	levelSet uint8
)

const (
	allAlgos  = algoSet(1)<<numAlgorithms - 1
	allLevels = levelSet(1<<LevelGlobal | 1<<LevelUser | 1<<LevelIP | 1<<LevelParam)
	keyLevels = levelSet(1<<LevelUser | 1<<LevelIP | 1<<LevelParam)
)

func algos(as ...Algorithm) algoSet {
	var s algoSet
	for _, a := range as {
		s |= 1 << a
	}
	return s
}

func (s algoSet) has(a Algorithm) bool { return a < numAlgorithms && s&(1<<a) != 0 }
func (s levelSet) has(l Level) bool    { return l < NumLevels && s&(1<<l) != 0 }

// names lists the algorithms of s, "a, b and c".
func (s algoSet) names() string {
	var out []string
	for _, a := range Algorithms() {
		if s.has(a) {
			out = append(out, a.String())
		}
	}
	if len(out) < 2 {
		return strings.Join(out, "")
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

// RuleFields returns the table of Rule's fields in the document's order.
func RuleFields() []RuleField { return append([]RuleField(nil), ruleFields...) }

// Ptr returns a pointer to the field in r: *string, *float64, *int,
// *time.Duration, *bool, *Level, *Algorithm, *BreakerStrategy, *[]string,
// *map[string]float64, **ClusterSpec or **Reserve.
func (f *RuleField) Ptr(r *Rule) any { return f.ptr(r) }

// Takes reports whether a rule like r (its algorithm, its level, and the
// fields that rule this one out) takes the field. A rule that does not
// take a field must leave it zero.
func (f *RuleField) Takes(r *Rule) bool {
	return f.algos.has(r.Algorithm) && f.levels.has(r.Level) && (f.unless == nil || f.unless(r) == "")
}

// NotFor says why a rule like r does not take the field, "" when it does.
func (f *RuleField) NotFor(r *Rule) string {
	switch {
	case f.Takes(r):
		return ""
	case !f.algos.has(r.Algorithm):
		for _, n := range f.not {
			if n.algos.has(r.Algorithm) {
				return sprintf(n.msg, r.Algorithm)
			}
		}
		return "only for " + f.algos.names() + " rules"
	case !f.levels.has(r.Level):
		switch f.levels {
		case 1 << LevelParam:
			return "only for param level rules"
		case 1 << LevelGlobal:
			return "only for global level rules"
		}
		return "only for user, ip and param levels"
	}
	return f.unless(r)
}

// InDocument reports whether a rules document may give the field on a rule
// like r: the rule takes it, and does not hold it only at its default (as
// a concurrency rule holds its window).
func (f *RuleField) InDocument(r *Rule) bool {
	if !f.Takes(r) {
		return false
	}
	for _, n := range f.implied {
		if n.algos.has(r.Algorithm) {
			return false
		}
	}
	return true
}

// NotInDocument says why a rules document may not give the field on a rule
// like r, "" when it may (InDocument).
func (f *RuleField) NotInDocument(r *Rule) string {
	if msg := f.NotFor(r); msg != "" {
		return msg
	}
	for _, n := range f.implied {
		if n.algos.has(r.Algorithm) {
			return sprintf(n.msg, r.Algorithm)
		}
	}
	return ""
}

// Required reports whether a rules document must give the field on a rule
// like r.
func (f *RuleField) Required(r *Rule) bool { return f.required && f.InDocument(r) }

// HasDefault reports whether a zero value of the field stands for a default
// (WithDefaults fills it in), so that a document giving it as zero is a
// mistake.
func (f *RuleField) HasDefault() bool { return f.def != nil || f.fill != nil }

// Default returns the field's default where it is a constant (nil where it
// has none or it follows other fields: a token bucket's burst is its limit).
func (f *RuleField) Default() any { return f.def }

// Written reports whether Format writes the field of r: the document may
// give it and it is set (or, like maxWait, zero is a setting).
func (f *RuleField) Written(r *Rule) bool {
	return f.InDocument(r) && (f.always || !f.IsZero(r))
}

// IsZero reports whether the field of r is its zero value (nil for lists,
// maps and nested objects).
func (f *RuleField) IsZero(r *Rule) bool {
	switch p := f.ptr(r).(type) {
	case *string:
		return *p == ""
	case *float64:
		return *p == 0
	case *int:
		return *p == 0
	case *time.Duration:
		return *p == 0
	case *bool:
		return !*p
	case *Level:
		return *p == 0
	case *Algorithm:
		return *p == 0
	case *BreakerStrategy:
		return *p == 0
	case *[]string:
		return *p == nil
	case *map[string]float64:
		return *p == nil
	case **ClusterSpec:
		return *p == nil
	case **Reserve:
		return *p == nil
	}
	panic("flow: rule field " + f.Name + " has no zero test")
}

// setDefault fills the field of r with its default when it is zero.
func (f *RuleField) setDefault(r *Rule) {
	if f.complete != nil {
		f.complete(r)
	}
	if f.fill != nil {
		f.fill(r)
		return
	}
	if f.def == nil || !f.IsZero(r) {
		return
	}
	switch p := f.ptr(r).(type) {
	case *float64:
		*p = f.def.(float64)
	case *int:
		*p = f.def.(int)
	case *time.Duration:
		*p = f.def.(time.Duration)
	default:
		panic("flow: rule field " + f.Name + " has a default of an unsupported kind")
	}
}
