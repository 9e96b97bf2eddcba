package envoyrls

import (
	"strings"
	"sync"
	"sync/atomic"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// stats counts the service's outcomes. Per limit they are keyed by the
// limit's place in the configuration ("domain.key_value.key"), never by a
// request's values, so their number is bounded by the configuration's size.
type stats struct {
	requests atomic.Uint64
	errors   atomic.Uint64
	byLimit  sync.Map // string -> *limitCounts
	byValue  sync.Map // string (limit path) -> *valueCounts
	maxVals  int      // distinct values per limit before "other"
}

// valueCounts are one limit's counts per value (detailed_metric,
// value_to_metric): at most maxVals values, the rest under OtherValue.
type valueCounts struct {
	mu sync.Mutex
	m  map[string]*limitCounts
}

// OtherValue is the value under which a limit's per-value counts go once
// it has counted WithValueMetricCap distinct values.
const OtherValue = "other"

// metricLevel is one level of a descriptor path: its composite key
// ("key" or "key_value", as configured) and whether value_to_metric asks
// for the request's own value there.
type metricLevel struct {
	composite string
	value     bool
}

// setValueMetric keeps levels when detailed (every level's value) or a
// value_to_metric on the way asks for per-value series.
func (l *limit) setValueMetric(levels []metricLevel, detailed bool) {
	want := detailed
	for _, lv := range levels {
		want = want || lv.value
	}
	if !want {
		return
	}
	l.levels = make([]metricLevel, len(levels))
	for i, lv := range levels {
		l.levels[i] = metricLevel{composite: lv.composite, value: lv.value || detailed}
	}
}

// record counts descriptor i's hits under l, and under its value when l
// has per-value series.
func (c *call) record(i int, l *limit, code rlspb.RateLimitResponse_Code, hits uint64) {
	c.s.stat.record(l, code, hits)
	if l.levels != nil {
		c.s.stat.recordValue(l, metricValue(l.levels, c.descriptor(i)), code, hits)
	}
}

// metricValue names a request descriptor in l's per-value series:
// "key_value" for each entry whose level asks for its value, the
// configured composite for the others, joined by '.'.
func metricValue(levels []metricLevel, d *rlv3.RateLimitDescriptor) string {
	var b strings.Builder
	for i, e := range d.GetEntries() {
		if i > 0 {
			b.WriteByte('.')
		}
		if i < len(levels) && !levels[i].value {
			b.WriteString(levels[i].composite)
			continue
		}
		b.WriteString(e.GetKey())
		b.WriteByte('_')
		b.WriteString(e.GetValue())
	}
	return b.String()
}

func (st *stats) recordValue(l *limit, value string, code rlspb.RateLimitResponse_Code, hits uint64) {
	v, ok := st.byValue.Load(l.path)
	if !ok {
		v, _ = st.byValue.LoadOrStore(l.path, &valueCounts{m: map[string]*limitCounts{}})
	}
	vc := v.(*valueCounts)
	vc.mu.Lock()
	lc := vc.m[value]
	if lc == nil {
		if len(vc.m) >= st.maxVals {
			value = OtherValue
		}
		if lc = vc.m[value]; lc == nil {
			lc = &limitCounts{}
			vc.m[value] = lc
		}
	}
	vc.mu.Unlock()
	lc.add(l, code, hits)
}

type limitCounts struct{ within, over, shadow atomic.Uint64 }

// LimitStats are the hits one configured limit saw.
type LimitStats struct {
	Within, Over, Shadow uint64
}

func newStats(maxVals int) *stats { return &stats{maxVals: maxVals} }

// record adds hits to l's counts: within, or over (and shadow when l is
// in shadow mode, where the caller answers OK).
func (st *stats) record(l *limit, code rlspb.RateLimitResponse_Code, hits uint64) {
	v, ok := st.byLimit.Load(l.path)
	if !ok {
		v, _ = st.byLimit.LoadOrStore(l.path, &limitCounts{})
	}
	v.(*limitCounts).add(l, code, hits)
}

func (lc *limitCounts) add(l *limit, code rlspb.RateLimitResponse_Code, hits uint64) {
	if code != rlspb.RateLimitResponse_OVER_LIMIT {
		lc.within.Add(hits)
		return
	}
	lc.over.Add(hits)
	if l.shadow {
		lc.shadow.Add(hits)
	}
}

// Stats is a snapshot of a Service's counts.
type Stats struct {
	Requests, Errors uint64
	Limits           map[string]LimitStats // by "domain.key_value.key"
	// Values are the limits with per-value series (detailed_metric,
	// value_to_metric), by limit then by value ("key_value.key_value",
	// or OtherValue past the cap).
	Values map[string]map[string]LimitStats
}

// Stats returns the service's counts so far.
func (s *Service) Stats() Stats {
	out := Stats{Requests: s.stat.requests.Load(), Errors: s.stat.errors.Load(), Limits: map[string]LimitStats{},
		Values: map[string]map[string]LimitStats{}}
	s.stat.byLimit.Range(func(k, v any) bool {
		out.Limits[k.(string)] = v.(*limitCounts).read()
		return true
	})
	s.stat.byValue.Range(func(k, v any) bool {
		vc := v.(*valueCounts)
		vals := map[string]LimitStats{}
		vc.mu.Lock()
		for val, lc := range vc.m {
			vals[val] = lc.read()
		}
		vc.mu.Unlock()
		out.Values[k.(string)] = vals
		return true
	})
	return out
}

func (lc *limitCounts) read() LimitStats {
	return LimitStats{Within: lc.within.Load(), Over: lc.over.Load(), Shadow: lc.shadow.Load()}
}
