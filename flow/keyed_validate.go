package flow

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Bounds of the fields of keyed rules and lists.
const (
	// MaxItems bounds a rule's Items: exceptions are for a few values;
	// more than this is a per-value table that belongs in its own rule set.
	MaxItems = 10000
	// MaxListValues bounds an allow or deny list.
	MaxListValues = 1000000
	// MaxParamName bounds Param's length.
	MaxParamName = 128
)

// itemProblems checks a keyed rule's items: their number, and each item's
// value and limit, in key order so the messages are stable.
func (r *Rule) itemProblems(bad badFunc) {
	if r.Items == nil {
		return
	}
	if len(r.Items) > MaxItems {
		bad("items", "at most %d, not %d", MaxItems, len(r.Items))
		return
	}
	keys := make([]string, 0, len(r.Items))
	for k := range r.Items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field := "items[" + quoteShort(k) + "]"
		if k == "" || !utf8.ValidString(k) {
			bad(field, "the value must be a non-empty UTF-8 string")
			continue
		}
		if r.Level == LevelIP {
			if a, err := netip.ParseAddr(k); err != nil || a.String() != k {
				bad(field, "must be an IP address in canonical form (items match one address exactly; use a separate rule for a network)")
				continue
			}
		}
		badIf(bad, field, r.limitProblem(r.Items[k]))
	}
}

// listProblems checks an allow or deny rule's level and values (which
// fields a list may not have is in the table, rule_table.go).
func (r *Rule) listProblems(bad badFunc) {
	if !r.Level.keyed() {
		bad("level", "%v rules need an identity: user, ip or param level, not %v", r.Algorithm, r.Level)
	}
	switch {
	case len(r.Values) == 0:
		bad("values", "required for %v rules (at least one value)", r.Algorithm)
	case len(r.Values) > MaxListValues:
		bad("values", "at most %d, not %d", MaxListValues, len(r.Values))
	}
	seen := make(map[string]int, len(r.Values))
	for i, v := range r.Values {
		field := fmt.Sprintf("values[%d]", i)
		norm := v
		if r.Level == LevelIP {
			p, err := parseListPrefix(v)
			if err != nil {
				bad(field, "%q: %v", v, err)
				continue
			}
			norm = p.String()
		} else if v == "" || !utf8.ValidString(v) {
			bad(field, "must be a non-empty UTF-8 string, not %q", v)
			continue
		}
		if j, dup := seen[norm]; dup {
			bad(field, "%q: duplicate of values[%d]", v, j)
			continue
		}
		seen[norm] = i
	}
}

// parseListPrefix reads an ip list value: an address (a prefix of its full
// length) or a CIDR whose host bits are zero.
func parseListPrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("not an IP address or CIDR prefix")
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("not an IP address or CIDR prefix")
	}
	if p.Addr().Is4In6() {
		// ::ffff:10.0.0.0/104 is 10.0.0.0/8: calls are matched unmapped.
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("an IPv4-mapped prefix must be at least /96")
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("host bits set (did you mean %v?)", m)
	}
	return p, nil
}

// quoteShort quotes a value for a field path, cut at 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "..."
	}
	return fmt.Sprintf("%q", s)
}

// Clone returns a deep copy of r: its Cluster spec, Reserve, Items and
// Values are new, so changing them does not change r.
func (r Rule) Clone() Rule {
	if r.Cluster != nil {
		c := *r.Cluster
		r.Cluster = &c
	}
	if r.Reserve != nil {
		res := *r.Reserve
		r.Reserve = &res
	}
	if r.Items != nil {
		r.Items = maps.Clone(r.Items)
	}
	r.Values = slices.Clone(r.Values)
	return r
}
