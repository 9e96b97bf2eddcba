package rules

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Change is one difference between two documents: a rule added, removed or
// changed (matched by id), or a section ("adaptive", "alerting") that
// differs.
type Change struct {
	// Kind is "added", "removed" or "changed".
	Kind string
	// Name is the rule's id (for a rule without one, its resource, level
	// and algorithm), or the section's name.
	Name string
	// Fields lists what changed, for Kind "changed".
	Fields []FieldChange
}

// FieldChange is one field that differs, with both values as they appear in
// the normalised form (defaults written out); a side that lacks the field
// is "".
type FieldChange struct {
	Field, Old, New string
}

// String renders the change on one line: "+ id", "- id", or
// "~ id: limit 10 -> 20, window 1s -> 1m".
func (c Change) String() string {
	switch c.Kind {
	case "added":
		return "+ " + c.Name
	case "removed":
		return "- " + c.Name
	}
	s := "~ " + c.Name + ":"
	for i, f := range c.Fields {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(" %s %s -> %s", f.Field, orNone(f.Old), orNone(f.New))
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Diff lists what applying next would change in a target running cur, rule
// by rule, in next's order, then the removed rules in cur's order, then the
// sections. cur may be nil (nothing in force). Two documents with the same
// Version have no changes. It compares the normalised forms, so a default
// spelled out on one side and left out on the other is no change.
func Diff(cur, next *Document) []Change {
	a, b := normalised(cur), normalised(next)
	var out []Change
	seen := map[string]bool{}
	for _, name := range b.order {
		seen[name] = true
		old, ok := a.rules[name]
		if !ok {
			out = append(out, Change{Kind: "added", Name: name})
		} else if f := fieldChanges(old, b.rules[name]); len(f) > 0 {
			out = append(out, Change{Kind: "changed", Name: name, Fields: f})
		}
	}
	for _, name := range a.order {
		if !seen[name] {
			out = append(out, Change{Kind: "removed", Name: name})
		}
	}
	for _, sec := range []string{"adaptive", "alerting"} {
		old, nw := a.sections[sec], b.sections[sec]
		switch {
		case old == nil && nw == nil:
		case old == nil:
			out = append(out, Change{Kind: "added", Name: sec})
		case nw == nil:
			out = append(out, Change{Kind: "removed", Name: sec})
		default:
			if f := fieldChanges(old, nw); len(f) > 0 {
				out = append(out, Change{Kind: "changed", Name: sec, Fields: f})
			}
		}
	}
	return out
}

// flatDoc is a document's normalised form as plain JSON values.
type flatDoc struct {
	order    []string
	rules    map[string]map[string]json.RawMessage
	sections map[string]map[string]json.RawMessage
}

func normalised(d *Document) flatDoc {
	f := flatDoc{rules: map[string]map[string]json.RawMessage{}, sections: map[string]map[string]json.RawMessage{}}
	if d == nil {
		return f
	}
	var raw struct {
		Shadow   bool                         `json:"shadow"`
		Rules    []map[string]json.RawMessage `json:"rules"`
		Adaptive map[string]json.RawMessage   `json:"adaptive"`
		Alerting map[string]json.RawMessage   `json:"alerting"`
	}
	if err := json.Unmarshal(d.Format(), &raw); err != nil {
		panic("rules: reading back a formatted document: " + err.Error()) // Format writes plain JSON
	}
	for i, r := range raw.Rules {
		if raw.Shadow {
			// The document's shadow is each rule's (Document.Rules), so
			// flipping it shows as a change of every rule it moves.
			r["shadow"] = json.RawMessage("true")
		}
		name := ruleName(r, i)
		if _, dup := f.rules[name]; dup { // ids are unique; unnamed twins are told apart by index
			name = fmt.Sprintf("%s #%d", name, i)
		}
		f.order = append(f.order, name)
		f.rules[name] = r
	}
	f.sections["adaptive"], f.sections["alerting"] = raw.Adaptive, raw.Alerting
	return f
}

func ruleName(r map[string]json.RawMessage, i int) string {
	var id, res, level, algo string
	_ = json.Unmarshal(r["id"], &id)
	if id != "" {
		return id
	}
	_ = json.Unmarshal(r["resource"], &res)
	_ = json.Unmarshal(r["level"], &level)
	_ = json.Unmarshal(r["algorithm"], &algo)
	if res == "" {
		return fmt.Sprintf("rules[%d]", i)
	}
	return fmt.Sprintf("%s %s %s", res, level, algo)
}

// fieldChanges compares two objects field by field, in sorted field order.
func fieldChanges(a, b map[string]json.RawMessage) []FieldChange {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []FieldChange
	for _, k := range keys {
		if old, nw := string(a[k]), string(b[k]); old != nw {
			out = append(out, FieldChange{Field: k, Old: old, New: nw})
		}
	}
	return out
}
