package envoyrls

import (
	"sort"
	"strings"
)

// LimitInfo is one configured limit and what it has counted, for a
// console: its place in the configuration, its rate, how it is decided.
type LimitInfo struct {
	Path            string // "domain.key_value.key"
	RequestsPerUnit uint32
	Unit            string // second, minute, …; "" when unlimited
	Algorithm       string // "" for envoyproxy/ratelimit's fixed window
	Unlimited       bool
	Shadow          bool
	Leased          bool
	Settled         bool
	Counts          LimitStats
}

// DomainInfo is one configured domain and its limits, in path order.
type DomainInfo struct {
	Domain string
	Limits []LimitInfo
}

// Domains lists the configuration in force, domain by domain, each limit
// with its counts so far (nil before the first Load).
func (s *Service) Domains() []DomainInfo {
	cfg := s.cfg.Load()
	if cfg == nil {
		return nil
	}
	st := s.Stats()
	var out []DomainInfo
	for _, d := range cfg.Domains() {
		di := DomainInfo{Domain: d}
		var walk func(n *node)
		walk = func(n *node) {
			if l := n.limit; l != nil {
				di.Limits = append(di.Limits, limitInfo(l, st.Limits[l.path]))
			}
			for _, ch := range n.children {
				walk(ch)
			}
		}
		walk(cfg.domains[d])
		sort.Slice(di.Limits, func(i, j int) bool { return di.Limits[i].Path < di.Limits[j].Path })
		out = append(out, di)
	}
	return out
}

func limitInfo(l *limit, counts LimitStats) LimitInfo {
	li := LimitInfo{Path: l.path, RequestsPerUnit: l.perUnit, Unlimited: l.unlimited, Shadow: l.shadow, Counts: counts}
	if !l.unlimited {
		li.Unit = strings.ToLower(l.unit.String())
	}
	if a := l.algo; a != nil {
		li.Algorithm, li.Leased, li.Settled = a.rule.Algorithm.String(), a.lease != nil, a.settle
	}
	return li
}
