package rules

import (
	"strconv"
	"strings"

	"github.com/flowgate/flowgate/flow"
)

// listForbidden are the fields an allow or deny rule must not have: it
// admits or refuses by identity, with no limit, window or state.
var listForbidden = []string{"limit", "items", "window", "burst", "warmup", "coldFactor", "buckets",
	"maxWait", "maxKeys", "idleTTL", "adaptive", "cluster", "refResource",
	"initialLimit", "minLimit", "maxLimit", "tolerance", "smoothing", "reserve"}

func isList(a flow.Algorithm) bool { return a == flow.AlgoAllow || a == flow.AlgoDeny }

// keyedFieldProblems reports, strictly, the fields of parameters, items,
// lists and associated resources that are given where they do not apply,
// even when empty (the engine sees only non-empty values), and returns
// them so the engine's checks are not repeated.
func keyedFieldProblems(o *object, r *flow.Rule, algoOK, levelOK bool) (skip []string) {
	if levelOK && o.given["param"] && r.Level != flow.LevelParam {
		o.fail("param", "only for param level rules")
		skip = append(skip, "param")
	}
	if levelOK && o.given["items"] && r.Level != flow.LevelUser && r.Level != flow.LevelIP && r.Level != flow.LevelParam {
		o.fail("items", "only for user, ip and param levels")
		skip = append(skip, "items")
	}
	if algoOK && o.given["values"] && !isList(r.Algorithm) {
		o.fail("values", "only for allow and deny rules")
		skip = append(skip, "values")
	}
	if o.given["refResource"] {
		// Strict even for "0s": such a rule never queues.
		skip = append(skip, notFor(o, []string{"maxWait"}, "not for refResource rules (they decide on traffic that is not theirs to wait for)")...)
	}
	if !algoOK || !levelOK {
		skip = append(skip, "param", "items", "values", "refResource")
	}
	return skip
}

// items reads an object of value: limit pairs.
func (o *object) items(key string, v *node) map[string]float64 {
	if v.kind != kindObject {
		o.typeError(key, `an object of value: limit pairs such as {"vip": 1000}`, v)
		return nil
	}
	if len(v.members) == 0 {
		o.fail(key, "must not be empty (leave it out)")
		return nil
	}
	out := make(map[string]float64, len(v.members))
	for _, m := range v.members {
		field := key + "[" + quoteShortKey(m.key) + "]"
		if _, dup := out[m.key]; dup {
			o.fail(field, "given more than once")
			continue
		}
		f, ok := o.amount(field, m.val)
		if ok {
			out[m.key] = f
		}
	}
	return out
}

// values reads an array of strings.
func (o *object) values(key string, v *node) []string {
	if v.kind != kindArray {
		o.typeError(key, `an array of strings such as ["10.0.0.0/8"]`, v)
		return nil
	}
	out := make([]string, 0, len(v.elems))
	for i, e := range v.elems {
		s, ok := o.str(key+"["+strconv.Itoa(i)+"]", e)
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// quoteShortKey quotes an item's value for its path, as flow does, cut at
// 64 bytes.
func quoteShortKey(s string) string {
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "..."
	}
	return strconv.Quote(s)
}
