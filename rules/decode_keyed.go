package rules

import (
	"strconv"
	"strings"
)

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
		if o.p.over {
			break
		}
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
		if o.p.over {
			break
		}
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
