package sentinel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// FieldError is one malformed value in a source file: the file, the index
// of the rule in its array, and the field ("" for the whole element).
type FieldError struct {
	File  string
	Index int // -1: the file itself
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Index >= 0 {
		fmt.Fprintf(&b, ": [%d]", e.Index)
		if e.Field != "" {
			b.WriteString("." + e.Field)
		}
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// element is one rule object of a source array, read field by field so
// that every problem names its field. Sentinel ignores fields it does not
// know (the dashboard adds app, ip, port, gmtCreate...), and so do we.
type element struct {
	file   string
	index  int
	prefix string // "rule." inside a dashboard entity's wrapper, "clusterConfig." ...
	raw    map[string]json.RawMessage
	errs   *problems
	hint   Dialect // the dialect of the file's rules before it (fileHint)
}

func (e *element) fail(field, format string, args ...any) {
	if e.errs.full() {
		return
	}
	e.errs.add(&FieldError{File: e.file, Index: e.index, Field: e.prefix + field, Msg: fmt.Sprintf(format, args...)})
}

func (e *element) has(key string) bool {
	v, ok := e.raw[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// keys lists the element's fields, for detection messages.
func (e *element) keys() []string {
	out := make([]string, 0, len(e.raw))
	for k := range e.raw {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// num reads a number field; def when absent or null.
func (e *element) num(key string, def float64) float64 {
	if !e.has(key) {
		return def
	}
	var f float64
	if err := json.Unmarshal(e.raw[key], &f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		e.fail(key, "must be a number, got %s", short(e.raw[key]))
		return def
	}
	return f
}

// whole reads a whole-number field (enums, milliseconds, counts) in
// [lo, hi]; def when absent.
func (e *element) whole(key string, def, lo, hi int64) int64 {
	if !e.has(key) {
		return def
	}
	f := e.num(key, math.NaN())
	switch {
	case math.IsNaN(f):
		return def
	case f != math.Trunc(f):
		e.fail(key, "must be a whole number, got %s", short(e.raw[key]))
	case f < float64(lo) || f > float64(hi):
		e.fail(key, "%s: out of range [%d, %d]", short(e.raw[key]), lo, hi)
	default:
		return int64(f)
	}
	return def
}

func (e *element) str(key string) string {
	if !e.has(key) {
		return ""
	}
	var s string
	if err := json.Unmarshal(e.raw[key], &s); err != nil {
		e.fail(key, "must be a string, got %s", short(e.raw[key]))
	}
	return s
}

func (e *element) boolean(key string) bool {
	if !e.has(key) {
		return false
	}
	var b bool
	if err := json.Unmarshal(e.raw[key], &b); err != nil {
		e.fail(key, "must be true or false, got %s", short(e.raw[key]))
	}
	return b
}

// object reads a nested object field as an element of its own; nil when
// absent or not an object (reported).
func (e *element) object(key string) *element {
	if !e.has(key) {
		return nil
	}
	sub := &element{file: e.file, index: e.index, prefix: e.prefix + key + ".", errs: e.errs}
	if err := json.Unmarshal(e.raw[key], &sub.raw); err != nil {
		e.fail(key, "must be an object, got %s", short(e.raw[key]))
		return nil
	}
	return sub
}

// array reads a field holding an array of objects.
func (e *element) array(key string) []*element {
	if !e.has(key) {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(e.raw[key], &items); err != nil {
		e.fail(key, "must be an array, got %s", short(e.raw[key]))
		return nil
	}
	out := make([]*element, 0, len(items))
	for i, it := range items {
		sub := &element{file: e.file, index: e.index, prefix: fmt.Sprintf("%s%s[%d].", e.prefix, key, i), errs: e.errs}
		if err := json.Unmarshal(it, &sub.raw); err != nil || sub.raw == nil {
			e.fail(fmt.Sprintf("%s[%d]", key, i), "must be an object, got %s", short(it))
			continue
		}
		out = append(out, sub)
	}
	return out
}

// scalarText reads a field that may be a string, number or boolean (a
// hot parameter's value) as text.
func (e *element) scalarText(key string) (string, bool) {
	if !e.has(key) {
		return "", false
	}
	v := bytes.TrimSpace(e.raw[key])
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, true
	}
	var f float64
	if json.Unmarshal(v, &f) == nil {
		return string(v), true
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return string(v), true
	}
	e.fail(key, "must be a string, number or boolean, got %s", short(v))
	return "", false
}

// short shows a bad value in a message, cut to a readable length.
func short(v []byte) string {
	s := string(bytes.TrimSpace(v))
	if len(s) > 40 {
		s = strings.ToValidUTF8(s[:40], "") + "..."
	}
	return s
}
