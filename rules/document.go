package rules

import (
	"fmt"
	"os"
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

// LoadFile reads and parses the rules document at path. See Parse.
func LoadFile(path string) (*Document, error) {
	data, err := os.ReadFile(path)
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
func Parse(data []byte) (*Document, error) {
	root, err := parseTree(data)
	if err != nil {
		return nil, err
	}
	p := &problems{}
	doc := &Document{}
	top := &object{p: p, index: -1}
	var ruleNodes *node
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
			ruleNodes = v
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
	if ruleNodes != nil {
		doc.rules = readRules(p, ruleNodes)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return doc, nil
}

// ruleKeys are a rule's fields in the document's (and fmt's) order.
var ruleKeys = []string{"id", "resource", "refResource", "level", "param", "algorithm", "values", "limit", "items",
	"window", "burst", "warmup", "coldFactor", "buckets", "maxWait", "maxKeys", "idleTTL", "adaptive", "cluster",
	"strategy", "threshold", "minRequests", "openFor", "probes", "slowCall",
	"initialLimit", "minLimit", "maxLimit", "tolerance", "smoothing", "reserve", "shadow"}

// breakerKeys are the fields only a circuit_breaker rule has; limitKeys
// those only the other algorithms have.
var (
	breakerKeys = []string{"strategy", "threshold", "minRequests", "openFor", "probes", "slowCall"}
	limitKeys   = []string{"limit", "burst", "warmup", "coldFactor", "buckets", "maxWait", "adaptive", "cluster"}
)

// maxDuration bounds every duration of a rule: anything longer than a year
// is a typo (a missing unit prefix), not a limit anyone means.
const maxDuration = 366 * 24 * time.Hour

// maxAmount bounds limit and burst: beyond it a float64 no longer counts
// single permits exactly.
const maxAmount = 1e15

// readRules reads every rule, then runs flow.ValidateRules over them all.
// Problems the JSON reading already reported for a field are not repeated
// by the engine's checks (a limit that was a string is not also "<= 0").
func readRules(p *problems, arr *node) []flow.Rule {
	type at struct {
		index int
		field string // "" for the whole rule
	}
	out := make([]flow.Rule, 0, len(arr.elems))
	reported := make(map[at]bool)
	for i, n := range arr.elems {
		before := len(p.list)
		r, skip := readRule(p, i, n)
		for _, f := range skip {
			reported[at{i, f}] = true
		}
		for _, e := range p.list[before:] {
			fe := e.(*FieldError)
			reported[at{fe.Index, fe.Field}] = true
		}
		out = append(out, r)
	}
	for _, e := range Problems(flow.ValidateRules(out)) {
		fe := fromFlow(e)
		base, _, _ := strings.Cut(fe.Field, "[") // items["vip"] was reported as items
		if reported[at{fe.Index, fe.Field}] || reported[at{fe.Index, base}] || reported[at{fe.Index, ""}] {
			continue
		}
		p.add(fe)
	}
	for i := range out {
		out[i] = out[i].WithDefaults()
	}
	return out
}

// readRule reads rule i. skip lists fields whose engine checks would be
// noise after the problems already reported.
func readRule(p *problems, i int, n *node) (r flow.Rule, skip []string) {
	o := &object{p: p, index: i}
	if n.kind == kindObject { // the id first, so every message can name it
		for _, m := range n.members {
			if m.key == "id" && m.val.kind == kindString {
				o.id = m.val.text
				break
			}
		}
	}
	var algoOK, levelOK bool
	ok := o.walk(n, "", ruleKeys, func(key string, v *node) {
		switch key {
		case "id":
			r.ID, _ = o.str(key, v)
		case "resource":
			r.Resource, _ = o.str(key, v)
		case "level":
			r.Level, levelOK = enum(o, key, v, levelNames, flow.ParseLevel)
		case "algorithm":
			r.Algorithm, algoOK = enum(o, key, v, algorithmNames, flow.ParseAlgorithm)
		case "limit":
			r.Limit, _ = o.amount(key, v)
		case "burst":
			r.Burst, _ = o.amount(key, v)
		case "coldFactor":
			r.ColdFactor, _ = o.number(key, v)
		case "buckets":
			r.Buckets, _ = o.integer(key, v)
		case "maxKeys":
			r.MaxKeys, _ = o.integer(key, v)
		case "window":
			r.Window, _ = o.span(key, v)
		case "warmup":
			r.Warmup, _ = o.span(key, v)
		case "maxWait":
			r.MaxWait, _ = o.span(key, v)
		case "idleTTL":
			r.IdleTTL, _ = o.span(key, v)
		case "adaptive":
			r.Adaptive, _ = o.boolean(key, v)
		case "cluster":
			r.Cluster = readCluster(p, i, o.id, v)
		case "strategy":
			r.Strategy, _ = enum(o, key, v, strategyNames, flow.ParseStrategy)
		case "threshold":
			r.Threshold, _ = o.number(key, v)
		case "minRequests":
			r.MinRequests, _ = o.integer(key, v)
		case "probes":
			r.Probes, _ = o.integer(key, v)
		case "openFor":
			r.OpenFor, _ = o.span(key, v)
		case "slowCall":
			r.SlowCall, _ = o.span(key, v)
		case "initialLimit":
			r.InitialLimit, _ = o.integer(key, v)
		case "minLimit":
			r.MinLimit, _ = o.integer(key, v)
		case "maxLimit":
			r.MaxLimit, _ = o.integer(key, v)
		case "tolerance":
			r.Tolerance, _ = o.number(key, v)
		case "smoothing":
			r.Smoothing, _ = o.number(key, v)
		case "reserve":
			r.Reserve = readReserve(p, i, o.id, v)
		case "shadow":
			r.Shadow, _ = o.boolean(key, v)
		case "param", "refResource":
			s, _ := o.str(key, v)
			if key == "param" {
				r.Param = s
			} else {
				r.RefResource = s
			}
		case "items":
			r.Items = o.items(key, v)
		case "values":
			r.Values = o.values(key, v)
		}
	})
	if !ok {
		return r, nil
	}
	if !o.given["level"] {
		levelOK = true
	}
	skip = append(skip, keyedFieldProblems(o, &r, algoOK, levelOK)...)
	if algoOK && r.Algorithm == flow.AlgoCircuitBreaker {
		// Strict both ways: a field of the other kind is an error even when
		// zero (the engine only sees non-zero values).
		o.required("resource", "strategy", "threshold", "openFor")
		skip = append(skip, notFor(o, limitKeys, "not for circuit_breaker rules")...)
	} else if algoOK && isList(r.Algorithm) {
		o.required("resource", "values")
		skip = append(skip, notFor(o, listForbidden, "not for allow and deny rules (a list has values, no limit)")...)
		skip = append(skip, notFor(o, breakerKeys, "only for circuit_breaker rules")...)
	} else {
		o.required("resource", "algorithm")
		if !algoOK || r.Algorithm != flow.AlgoAdaptiveConcurrency {
			o.required("limit")
		}
		if algoOK {
			skip = append(skip, notFor(o, breakerKeys, "only for circuit_breaker rules")...)
		}
	}
	// Which fields apply depends on the algorithm and level; when those are
	// wrong, the engine's "only for ..." checks would only add noise.
	if !algoOK {
		skip = append(skip, "limit", "burst", "warmup", "coldFactor", "buckets", "maxWait")
		skip = append(skip, breakerKeys...)
		skip = append(skip, "window", "initialLimit", "minLimit", "maxLimit", "tolerance", "smoothing", "reserve", "adaptive", "cluster")
	}
	if !levelOK {
		skip = append(skip, "maxKeys", "idleTTL")
	}
	// A concurrency rule counts calls in flight, not calls per window, and
	// never queues: a window or maxWait on it would be read and ignored.
	if algoOK && r.Algorithm == flow.AlgoConcurrency {
		if o.given["window"] {
			o.fail("window", "not supported for concurrency rules (limit is the most calls in flight)")
		}
		if o.given["maxWait"] {
			o.fail("maxWait", "not supported for concurrency rules (they never queue)")
		}
	}
	if algoOK && r.Algorithm == flow.AlgoAdaptiveConcurrency {
		if o.given["window"] {
			o.fail("window", "does not apply to adaptive_concurrency")
		}
		if o.given["maxWait"] {
			o.fail("maxWait", "not supported for adaptive_concurrency rules (they never queue)")
		}
	}
	// A field explicitly set to zero would silently turn into its default;
	// say so instead. maxWait "0s" is a real setting (never wait).
	for _, k := range []string{"window", "burst", "coldFactor", "buckets", "maxKeys", "idleTTL", "minRequests", "probes",
		"initialLimit", "minLimit", "maxLimit", "tolerance", "smoothing"} {
		if k == "window" && (r.Algorithm == flow.AlgoConcurrency || r.Algorithm == flow.AlgoAdaptiveConcurrency) {
			continue // reported above
		}
		if o.given[k] && isZero(n, k) {
			o.fail(k, "must be > 0 (leave it out for the default)")
		}
	}
	return r, skip
}

// isZero reports whether the key's value in obj is a zero number or duration.
func isZero(obj *node, key string) bool {
	for _, m := range obj.members {
		if m.key == key {
			switch m.val.kind {
			case kindNumber:
				f, err := strconv.ParseFloat(m.val.text, 64)
				return err == nil && f == 0
			case kindString:
				d, msg := parseDuration(m.val.text)
				return msg == "" && d == 0
			}
		}
	}
	return false
}

// amount reads a limit or burst: a finite number no larger than maxAmount.
func (o *object) amount(key string, v *node) (float64, bool) {
	f, ok := o.number(key, v)
	if ok && f > maxAmount {
		o.fail(key, "%s: out of range (at most 1e15)", v.text)
		return 0, false
	}
	return f, ok
}

// span reads a rule duration no longer than maxDuration.
func (o *object) span(key string, v *node) (time.Duration, bool) {
	d, ok := o.duration(key, v)
	if ok && d > maxDuration {
		o.fail(key, "%q: out of range (at most 8784h, a year)", v.text)
		return 0, false
	}
	return d, ok
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

// notFor reports each of keys that was given, with msg, and returns them
// (so the engine's own check of the field is not repeated).
func notFor(o *object, keys []string, msg string) []string {
	var out []string
	for _, k := range keys {
		if o.given[k] {
			o.fail(k, "%s", msg)
			out = append(out, k)
		}
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
