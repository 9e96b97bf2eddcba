package envoyrls

import (
	"strconv"
	"strings"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// match is the limit a request descriptor falls under, if any, and for
// entries matched by a share_threshold wildcard, the pattern their value
// counts under (share[i] != "": entry i counts as that pattern).
type match struct {
	limit *limit
	share []string
}

// match finds the limit of descriptor d in domain, walking the tree one
// entry at a time. At each level an entry matches, in this order: the
// child "key_value" exactly; else the first wildcard child (in file order)
// whose pattern matches "key_value"; else the child "key" alone. A limit
// applies only when it sits at the request's last entry; the walk stops
// early at a descriptor with no children. An unknown domain matches
// nothing; a descriptor carrying its own limit (Envoy's override) gets it
// when the domain is known.
func (c *Config) match(domain string, d *rlv3.RateLimitDescriptor) match {
	cur := c.domains[domain]
	if cur == nil {
		return match{}
	}
	if o := d.GetLimit(); o != nil {
		return match{limit: overrideLimit(domain, d, o)}
	}
	var m match
	entries := d.GetEntries()
	for i, e := range entries {
		kv := e.GetKey() + "_" + e.GetValue()
		next := cur.children[kv]
		viaWildcard := false
		if next == nil {
			for _, w := range cur.wild {
				if wildcardMatch(w.parts, kv) {
					next, viaWildcard = cur.children[w.key], true
					break
				}
			}
		}
		if next == nil {
			next = cur.children[e.GetKey()]
		}
		if next == nil {
			break
		}
		if viaWildcard && next.share != "" {
			if m.share == nil {
				m.share = make([]string, len(entries))
			}
			m.share[i] = next.share
		}
		if next.limit != nil && i == len(entries)-1 {
			m.limit = next.limit
		}
		if len(next.children) == 0 {
			break
		}
		cur = next
	}
	if m.limit == nil {
		m.share = nil
	}
	return m
}

// overrideLimit is the limit Envoy sent with a descriptor (its
// limit_override): a fixed window, never shadow, with no name.
func overrideLimit(domain string, d *rlv3.RateLimitDescriptor, o *rlv3.RateLimitDescriptor_RateLimitOverride) *limit {
	// The two unit enums agree on their numbers (type.v3 lacks WEEK).
	unit := rlspb.RateLimitResponse_RateLimit_Unit(o.GetUnit())
	return &limit{
		perUnit: o.GetRequestsPerUnit(), unit: unit, path: domain + "." + entriesKeys(d) + "(override)",
		unitLength: unitSeconds(unit),
		current:    &rlspb.RateLimitResponse_RateLimit{RequestsPerUnit: o.GetRequestsPerUnit(), Unit: unit},
	}
}

// entriesKeys names a descriptor by its keys alone ("a.b"): a name for
// its statistics that request values cannot multiply.
func entriesKeys(d *rlv3.RateLimitDescriptor) string {
	var b strings.Builder
	for i, e := range d.GetEntries() {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.GetKey())
	}
	return b.String()
}

// wildcardMatch reports whether s matches a pattern split on '*': s starts
// with the first part, ends with the last, and holds the middle parts in
// order between them without overlap. Each '*' stands for any run of
// characters, the empty one included.
func wildcardMatch(parts []string, s string) bool {
	if len(parts) == 1 {
		return parts[0] == s
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	mid := s[len(first) : len(s)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(mid, p)
		if i < 0 {
			return false
		}
		mid = mid[i+len(p):]
	}
	return true
}

// appendCounterKey appends the name of descriptor d's counter for the
// window starting at windowStart (Unix seconds): domain, then each entry's
// key and value (or its share_threshold pattern), then the window. It is
// envoyproxy/ratelimit's layout, so a deployment moving over with the same
// Redis and prefix keeps the counts of the current windows.
func appendCounterKey(b []byte, prefix, domain string, d *rlv3.RateLimitDescriptor, share []string, windowStart int64) []byte {
	b = append(b, prefix...)
	b = append(b, domain...)
	b = append(b, '_')
	for i, e := range d.GetEntries() {
		b = append(b, e.GetKey()...)
		b = append(b, '_')
		if i < len(share) && share[i] != "" {
			b = append(b, share[i]...)
		} else {
			b = append(b, e.GetValue()...)
		}
		b = append(b, '_')
	}
	return strconv.AppendInt(b, windowStart, 10)
}
