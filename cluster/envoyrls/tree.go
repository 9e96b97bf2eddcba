package envoyrls

import (
	"fmt"
	"strings"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// domain adds one file's domain to c. Two files naming the same domain
// are refused (envoyproxy/ratelimit's default; it can merge them only
// behind a setting).
func (p *parser) domain(c *Config, root yamlRoot) {
	if root.Domain == "" {
		p.fail("", "domain: empty or missing")
		return
	}
	if _, dup := c.domains[root.Domain]; dup {
		p.fail("domain "+quote(root.Domain), "domain defined twice (in this file or an earlier one)")
		return
	}
	n := &node{children: map[string]*node{}}
	p.descriptors(n, root.Domain, nil, root.Descriptors)
	c.domains[root.Domain] = n
}

// descriptors builds the children of parent from ds; path is parent's
// place ("domain", "domain.key_value"), levels the composite keys and
// value_to_metric flags of the descriptors leading to it.
func (p *parser) descriptors(parent *node, path string, levels []metricLevel, ds []yamlDesc) {
	for i := range ds {
		d := &ds[i]
		where := fmt.Sprintf("%s.descriptors[%d]", path, i)
		if d.Key == "" {
			p.fail(where, "key: empty or missing")
			continue
		}
		composite := d.Key
		if d.Value != "" {
			composite += "_" + d.Value
		}
		childPath := path + "." + composite
		if _, dup := parent.children[composite]; dup {
			p.fail(where, "duplicate composite key %q", childPath)
			continue
		}
		wild := strings.Contains(composite, "*")
		if d.ShareThreshold && !wild {
			p.fail(where, "share_threshold: needs a wildcard value (one holding '*'); %q has none", composite)
		}
		n := &node{children: map[string]*node{}}
		here := append(levels[:len(levels):len(levels)], metricLevel{composite: composite, value: d.ValueToMetric})
		if d.RateLimit != nil {
			n.limit = p.limit(where, childPath, d)
			n.limit.setValueMetric(here, d.DetailedMetric)
		}
		if d.ShareThreshold && wild {
			n.share = strings.TrimPrefix(composite, d.Key+"_")
		}
		if wild {
			parent.wild = append(parent.wild, wildcard{key: composite, parts: strings.Split(composite, "*")})
		}
		p.descriptors(n, childPath, here, d.Descriptors)
		parent.children[composite] = n
	}
}

// limit validates a descriptor's rate_limit.
func (p *parser) limit(where, path string, d *yamlDesc) *limit {
	y := d.RateLimit
	where += ".rate_limit"
	unit, known := rlspb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(y.Unit)]
	valid := known && unit != int32(rlspb.RateLimitResponse_RateLimit_UNKNOWN)
	switch {
	case y.Unlimited && valid:
		p.fail(where, "unit: not allowed with unlimited: true")
	case !y.Unlimited && !valid:
		p.fail(where, "unit: %q is not one of second, minute, hour, day, week, month, year", y.Unit)
	}
	l := &limit{
		perUnit: y.RequestsPerUnit, unit: rlspb.RateLimitResponse_RateLimit_Unit(unit), name: y.Name,
		unlimited: y.Unlimited, shadow: d.ShadowMode, quota: d.QuotaMode, path: path, detailed: d.DetailedMetric,
	}
	for j, r := range y.Replaces {
		switch {
		case r.Name == "":
			p.fail(fmt.Sprintf("%s.replaces[%d]", where, j), "name: empty or missing")
		case r.Name == y.Name:
			p.fail(fmt.Sprintf("%s.replaces[%d]", where, j), "a limit cannot replace itself (%q)", r.Name)
		}
		l.replaces = append(l.replaces, r.Name)
	}
	if valid {
		l.unitLength = unitSeconds(l.unit)
		l.current = &rlspb.RateLimitResponse_RateLimit{Name: y.Name, RequestsPerUnit: y.RequestsPerUnit, Unit: l.unit}
		l.algo = p.algo(where, l, &y.yamlAlgo)
	} else if y.hasAlgo() {
		p.fail(where, "algorithm: needs a unit (and not unlimited)")
	}
	return l
}

// unitSeconds is the length of a unit in seconds, as envoyproxy/ratelimit
// counts it: a month is 30 days and a year 365, whatever the calendar says.
// A window starts at a multiple of it since the Unix epoch.
func unitSeconds(u rlspb.RateLimitResponse_RateLimit_Unit) int64 {
	switch u {
	case rlspb.RateLimitResponse_RateLimit_SECOND:
		return 1
	case rlspb.RateLimitResponse_RateLimit_MINUTE:
		return 60
	case rlspb.RateLimitResponse_RateLimit_HOUR:
		return 3600
	case rlspb.RateLimitResponse_RateLimit_DAY:
		return 86400
	case rlspb.RateLimitResponse_RateLimit_WEEK:
		return 7 * 86400
	case rlspb.RateLimitResponse_RateLimit_MONTH:
		return 30 * 86400
	case rlspb.RateLimitResponse_RateLimit_YEAR:
		return 365 * 86400
	}
	return 0
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
