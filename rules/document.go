package rules

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/adaptive/cpuconfig"
	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/flow"
)

// Document is a parsed, validated rules document with its defaults filled
// in. It is immutable: Rules returns a copy.
type Document struct {
	// Schema is the document's "$schema" reference, kept so fmt preserves it.
	Schema string
	// Adaptive is the document's "adaptive" section, defaults filled; nil
	// when absent. Package cpuconfig owns its settings; apply them with
	// adaptive.WithConfig or adaptive.Controller.SetConfig.
	Adaptive *cpuconfig.Config
	// Alerting is the document's "alerting" section, defaults filled; nil
	// when absent. Package alerting owns its settings: apply it with
	// Section.Options or Alerter.SetConfig.
	Alerting *alerting.Section
	// Shadow is the document's "shadow": true puts every rule in shadow
	// (flow.Rule.Shadow): Rules sets Shadow on each rule it returns, so
	// flipping this one field moves the whole document between trying and
	// enforcing. A rule's own "shadow" can only add to it.
	Shadow bool

	rules []flow.Rule
}

// Rules returns the document's rules, defaults filled, ready for
// flow.Engine.LoadRules; with the document's Shadow, each with Shadow set.
// The slice, its ClusterSpecs, Reserves, Items and Values are the caller's.
func (d *Document) Rules() []flow.Rule {
	out := make([]flow.Rule, len(d.rules))
	for i := range d.rules {
		out[i] = d.rules[i].Clone()
		out[i].Shadow = out[i].Shadow || d.Shadow
	}
	return out
}

// LoadFile reads the rules document at path with ReadFile (a regular file
// of at most MaxDocumentBytes) and parses it. See Parse.
func LoadFile(path string) (*Document, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse reads a rules document strictly and validates it. Unknown fields,
// fields given twice, wrong types, bad duration units, impossible values and
// wrong combinations are all errors; Parse reports every one it finds,
// joined, each a *FieldError naming the rule index, id and field:
//
//	rules[3] (id "orders"): window: "10x": unknown unit "x" (valid: ns, us, ms, s, m, h)
//
// A JSON syntax error stops parsing and names the line and column.
// The rules' semantic checks are flow.ValidateRules, so a document that
// parses is one the engine accepts.
//
// Parse lists at most MaxProblems problems: past them it stops reading and
// adds one last problem saying where it stopped. A document over
// MaxDocumentBytes is refused whole (errors.Is(err, ErrTooLarge)).
func Parse(data []byte) (*Document, error) {
	if len(data) > MaxDocumentBytes {
		err := tooLarge(fmt.Sprint(len(data)))
		return nil, &FieldError{Index: -1, Msg: err.Error(), cause: err}
	}
	root, rulesText, err := parseTree(data)
	if err != nil {
		return nil, err
	}
	p := newProblems()
	doc := &Document{}
	top := &object{p: p, index: -1}
	var ruleNodes bool
	ok := top.walk(root, "document", []string{"$schema", "shadow", "rules", "adaptive", "alerting"}, func(key string, v *node) {
		switch key {
		case "$schema":
			doc.Schema, _ = top.str(key, v)
		case "shadow":
			doc.Shadow, _ = top.boolean(key, v)
		case "rules":
			if v.kind != kindArray {
				top.typeError(key, "an array of rules", v)
				return
			}
			ruleNodes = true
		case "adaptive":
			doc.Adaptive = readAdaptive(p, v)
		case "alerting":
			doc.Alerting = readAlerting(p, v)
		}
	})
	if !ok {
		return nil, p.err()
	}
	top.required("rules")
	if ruleNodes {
		doc.rules = readRules(p, rulesText)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return doc, nil
}

// ruleFields is flow's table of a rule's fields, in the document's (and
// fmt's) order: it says how each is read, which rules take it, and which
// have defaults. ruleKeys are their names; fieldOf gives a name's index.
var (
	ruleFields = flow.RuleFields()
	ruleKeys   = func() []string {
		out := make([]string, len(ruleFields))
		for i := range ruleFields {
			out[i] = ruleFields[i].Name
		}
		return out
	}()
	fieldOf = func() map[string]int {
		m := make(map[string]int, len(ruleFields))
		for i := range ruleFields {
			m[ruleFields[i].Name] = i
		}
		return m
	}()
)

// readRules reads the rules of the "rules" array text arr one at a time,
// each checked by the engine (flow.ValidateRules) as soon as it is read,
// so that past MaxProblems reading stops: the rest is neither read nor
// checked. Problems the JSON reading already reported for a field are not
// repeated by the engine's checks (a limit that was a string is not also
// "<= 0").
//
// ValidateRules' one check across rules, ids given twice, is made here,
// rule by rule (FuzzParse holds Parse and ValidateRules in agreement).
func readRules(p *problems, arr []byte) []flow.Rule {
	var out []flow.Rule
	ids := make(map[string]int)
	total := elements(arr, func(i int, n *node) bool {
		if p.over {
			p.stoppedAt = i
			return false
		}
		before := len(p.list)
		r, skip := readRule(p, i, n)
		reported := map[string]bool{}
		for _, f := range skip {
			reported[f] = true
		}
		for _, e := range p.list[before:] {
			reported[e.(*FieldError).Field] = true
		}
		for _, e := range Problems(flow.ValidateRules([]flow.Rule{r})) {
			fe := fromFlow(e)
			fe.Index = i
			base, _, _ := strings.Cut(fe.Field, "[") // items["vip"] was reported as items
			if !reported[fe.Field] && !reported[base] && !reported[""] {
				p.add(fe)
			}
		}
		if j, dup := ids[r.ID]; dup && r.ID != "" && !reported["id"] && !reported[""] {
			p.add(&FieldError{Index: i, ID: r.ID, Field: "id", Msg: "duplicate of rules[" + strconv.Itoa(j) + "]"})
		} else if !dup {
			ids[r.ID] = i
		}
		out = append(out, r.WithDefaults())
		return true
	})
	if p.over {
		p.rules = total
		return nil
	}
	return out
}

// readRule reads rule i by the table of fields. skip lists fields whose
// engine checks would be noise after the problems already reported.
func readRule(p *problems, i int, n *node) (r flow.Rule, skip []string) {
	o := &object{p: p, index: i, id: ruleID(n)}
	var read uint64 // bit j: ruleFields[j]'s value was read without a problem
	if !o.walk(n, "", ruleKeys, func(key string, v *node) {
		if j := fieldOf[key]; o.field(&ruleFields[j], &r, v) {
			read |= 1 << j
		}
	}) {
		return r, nil
	}
	for j := range ruleFields {
		if f := &ruleFields[j]; f.Required(&r) && !o.given[f.Name] {
			o.fail(f.Name, "required")
		}
	}
	if read&(1<<fieldOf["algorithm"]) == 0 || o.given["level"] && read&(1<<fieldOf["level"]) == 0 {
		// Which fields apply depends on the algorithm and level: when those
		// are wrong, the engine's "only for ..." checks would only add noise.
		for _, f := range ruleFields {
			if f.Name != "id" && f.Name != "resource" {
				skip = append(skip, f.Name)
			}
		}
		return r, skip
	}
	for j := range ruleFields {
		f := &ruleFields[j]
		if read&(1<<j) == 0 {
			continue // not given, or already reported
		}
		// Strict: a field the rule does not take is an error even when
		// zero (the engine sees only non-zero values); a field given as
		// zero would silently turn into its default, so say so instead.
		if !f.InDocument(&r) {
			o.fail(f.Name, "%s", f.NotInDocument(&r))
		} else if f.HasDefault() && f.IsZero(&r) {
			o.fail(f.Name, "must be > 0 (leave it out for the default)")
		}
	}
	return r, nil
}

// ruleID is the id of a rule object, read first so that every message can
// name it; "" when it has none that is a string.
func ruleID(n *node) string {
	if n.kind != kindObject {
		return ""
	}
	for _, m := range n.members {
		if m.key == "id" && m.val.kind == kindString {
			return m.val.text
		}
	}
	return ""
}

// field reads the value v of the rule field f into r, by the type of the
// field, and reports whether it was read without a problem.
func (o *object) field(f *flow.RuleField, r *flow.Rule, v *node) bool {
	key := f.Name
	switch p := f.Ptr(r).(type) {
	case *string:
		return put(p)(o.str(key, v))
	case *float64:
		if f.Kind == flow.KindAmount {
			return put(p)(o.amount(key, v))
		}
		return put(p)(o.number(key, v))
	case *int:
		return put(p)(o.integerUpTo(key, v, f.Max()))
	case *time.Duration:
		return put(p)(o.span(key, v))
	case *bool:
		return put(p)(o.boolean(key, v))
	case *flow.Level:
		return put(p)(enum(o, key, v, levelNames, flow.ParseLevel))
	case *flow.Algorithm:
		return put(p)(enum(o, key, v, algorithmNames, flow.ParseAlgorithm))
	case *flow.BreakerStrategy:
		return put(p)(enum(o, key, v, strategyNames, flow.ParseStrategy))
	case *[]string:
		*p = o.values(key, v)
	case *map[string]float64:
		*p = o.items(key, v)
	case **flow.ClusterSpec:
		*p = readCluster(o.p, o.index, o.id, v)
	case **flow.Reserve:
		*p = readReserve(o.p, o.index, o.id, v)
	default:
		panic("rules: no reader for rule field " + key)
	}
	return true
}

// put returns a func that stores a reader's value in dst and returns its ok.
func put[T any](dst *T) func(v T, ok bool) bool {
	return func(v T, ok bool) bool {
		*dst = v
		return ok
	}
}

// amount reads a limit or burst: a finite number no larger than
// flow.MaxAmount.
func (o *object) amount(key string, v *node) (float64, bool) {
	f, ok := o.number(key, v)
	if ok && f > flow.MaxAmount {
		most := strings.Replace(strconv.FormatFloat(flow.MaxAmount, 'g', -1, 64), "e+", "e", 1)
		o.fail(key, "%s: out of range (at most %s)", v.text, most)
		return 0, false
	}
	return f, ok
}

// span reads a rule duration no longer than flow.MaxDuration.
func (o *object) span(key string, v *node) (time.Duration, bool) {
	return o.durationUpTo(key, v, flow.MaxDuration)
}

// enum reads one of a fixed set of names, listing them when it is not one.
func enum[T any](o *object, key string, v *node, valid func() []string, parse func(string) (T, error)) (T, bool) {
	var zero T
	s, ok := o.str(key, v)
	if !ok {
		return zero, false
	}
	t, err := parse(s)
	if err != nil {
		o.fail(key, "unknown %q (valid: %s)", s, strings.Join(valid(), ", "))
		return zero, false
	}
	return t, true
}

// oneOf reads a string that must be one of valid.
func (o *object) oneOf(key string, v *node, valid ...string) (string, bool) {
	return enum(o, key, v, func() []string { return valid }, func(s string) (string, error) {
		for _, x := range valid {
			if s == x {
				return s, nil
			}
		}
		return "", fmt.Errorf("unknown")
	})
}

func levelNames() []string     { return names(flow.Levels()) }
func strategyNames() []string  { return names(flow.Strategies()) }
func algorithmNames() []string { return names(flow.Algorithms()) }

// names lists the JSON names of a set of enum values.
func names[T fmt.Stringer](list []T) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = x.String()
	}
	return out
}

// readReserve reads a rule's "reserve": fractions of a concurrency limit
// held back for the higher priority classes (flow.Reserve). Classes left
// out reserve nothing; flow's validation checks the values.
func readReserve(p *problems, i int, id string, v *node) *flow.Reserve {
	r := &flow.Reserve{}
	o := &object{p: p, index: i, id: id, prefix: "reserve."}
	o.walk(v, "", []string{"critical", "high", "normal"}, func(key string, v *node) {
		f, _ := o.number(key, v)
		switch key {
		case "critical":
			r.Critical = f
		case "high":
			r.High = f
		case "normal":
			r.Normal = f
		}
	})
	return r
}

func readCluster(p *problems, i int, id string, v *node) *flow.ClusterSpec {
	c := &flow.ClusterSpec{}
	o := &object{p: p, index: i, id: id, prefix: "cluster."}
	o.walk(v, "", []string{"threshold", "fallback"}, func(key string, v *node) {
		switch key {
		case "threshold":
			c.Threshold, _ = o.oneOf(key, v, "global", "per_instance")
		case "fallback":
			c.Fallback, _ = o.oneOf(key, v, "local", "allow", "deny")
		}
	})
	return c
}
