package rules

import "github.com/flowgate/flowgate/flow"

// FromRules builds the Document holding rs (and no adaptive or alerting
// section), validated as Parse validates a document's rules, so that its
// Format and Version describe rules that did not come from a file, such as
// an engine's (flow.Engine.Rules).
func FromRules(rs []flow.Rule) (*Document, error) {
	if err := flow.ValidateRules(rs); err != nil {
		return nil, err
	}
	d := &Document{rules: make([]flow.Rule, len(rs))}
	for i, r := range rs {
		r = r.WithDefaults()
		if r.Cluster != nil { // the document must not change with the caller's spec
			c := *r.Cluster
			r.Cluster = &c
		}
		d.rules[i] = r
	}
	return d, nil
}
