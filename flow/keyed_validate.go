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

// keyedProblems checks Param, Items, Values and RefResource: each is
// required where it applies and an error everywhere else.
func (r *Rule) keyedProblems() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fieldProblem(field, format, args...))
	}
	switch {
	case r.Level == LevelParam && r.Param == "":
		bad("param", "required for param level rules (the name given to flow.WithParam)")
	case r.Level != LevelParam && r.Param != "":
		bad("param", "only for param level rules")
	case len(r.Param) > MaxParamName || !utf8.ValidString(r.Param) || strings.TrimSpace(r.Param) != r.Param:
		bad("param", "must be valid UTF-8, at most %d bytes, without surrounding space, not %q", MaxParamName, r.Param)
	}
	if r.Items != nil {
		switch {
		case !r.Level.keyed():
			bad("items", "only for user, ip and param levels")
		case r.Algorithm.isList() || r.Algorithm == AlgoCircuitBreaker:
			bad("items", "not for %v rules", r.Algorithm)
		case len(r.Items) > MaxItems:
			bad("items", "at most %d, not %d", MaxItems, len(r.Items))
		default:
			errs = append(errs, r.itemProblems()...)
		}
	}
	if r.Algorithm.isList() {
		errs = append(errs, r.listProblems()...)
	} else if r.Values != nil {
		bad("values", "only for allow and deny rules")
	}
	if r.RefResource != "" {
		switch {
		case r.Algorithm.isList() || r.Algorithm == AlgoCircuitBreaker || r.Algorithm == AlgoConcurrency:
			bad("refResource", "only for rate rules, not %v", r.Algorithm)
		case r.Level != LevelGlobal:
			bad("refResource", "only for global level rules")
		case r.RefResource == r.Resource:
			bad("refResource", "must name another resource than %q", r.Resource)
		case strings.TrimSpace(r.RefResource) == "" || !utf8.ValidString(r.RefResource):
			bad("refResource", "must be a valid resource name, not %q", r.RefResource)
		}
		if r.MaxWait != 0 {
			bad("maxWait", "not for refResource rules (they decide on traffic that is not theirs to wait for)")
		}
		if r.Cluster != nil {
			bad("cluster", "not for refResource rules: they are decided by each instance")
		}
	}
	return errs
}

// itemProblems checks each item's value and limit, in key order so the
// messages are stable.
func (r *Rule) itemProblems() []error {
	var errs []error
	keys := make([]string, 0, len(r.Items))
	for k := range r.Items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field := "items[" + quoteShort(k) + "]"
		if k == "" || !utf8.ValidString(k) {
			errs = append(errs, fieldProblem(field, "the value must be a non-empty UTF-8 string"))
			continue
		}
		if r.Level == LevelIP {
			if a, err := netip.ParseAddr(k); err != nil || a.String() != k {
				errs = append(errs, fieldProblem(field, "must be an IP address in canonical form (items match one address exactly; use a separate rule for a network)"))
				continue
			}
		}
		if msg := r.limitProblem(r.Items[k]); msg != "" {
			errs = append(errs, fieldProblem(field, "%s", msg))
		}
	}
	return errs
}

// listProblems checks an allow or deny rule: its values, and that it has
// none of the fields of a limit.
func (r *Rule) listProblems() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fieldProblem(field, format, args...))
	}
	if !r.Level.keyed() {
		bad("level", "%v rules need an identity: user, ip or param level, not %v", r.Algorithm, r.Level)
	}
	switch {
	case len(r.Values) == 0:
		bad("values", "required for %v rules (at least one value)", r.Algorithm)
	case len(r.Values) > MaxListValues:
		bad("values", "at most %d, not %d", MaxListValues, len(r.Values))
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"window", r.Window != 0}, {"maxWait", r.MaxWait != 0}, {"maxKeys", r.MaxKeys != 0},
		{"idleTTL", r.IdleTTL != 0}, {"adaptive", r.Adaptive}} {
		if f.set {
			bad(f.name, "not for %v rules", r.Algorithm)
		}
	}
	if r.Cluster != nil {
		bad("cluster", "not for %v rules: lists are decided by each instance", r.Algorithm)
	}
	seen := make(map[string]int, len(r.Values))
	for i, v := range r.Values {
		field := fmt.Sprintf("values[%d]", i)
		norm := v
		if r.Level == LevelIP {
			p, err := parseListPrefix(v)
			if err != nil {
				errs = append(errs, fieldProblem(field, "%q: %v", v, err))
				continue
			}
			norm = p.String()
		} else if v == "" || !utf8.ValidString(v) {
			errs = append(errs, fieldProblem(field, "must be a non-empty UTF-8 string, not %q", v))
			continue
		}
		if j, dup := seen[norm]; dup {
			errs = append(errs, fieldProblem(field, "%q: duplicate of values[%d]", v, j))
			continue
		}
		seen[norm] = i
	}
	return errs
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
