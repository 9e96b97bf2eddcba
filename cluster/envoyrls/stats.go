package envoyrls

import (
	"sync"
	"sync/atomic"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// stats counts the service's outcomes. Per limit they are keyed by the
// limit's place in the configuration ("domain.key_value.key"), never by a
// request's values, so their number is bounded by the configuration's size.
type stats struct {
	requests atomic.Uint64
	errors   atomic.Uint64
	byLimit  sync.Map // string -> *limitCounts
}

type limitCounts struct{ within, over, shadow atomic.Uint64 }

// LimitStats are the hits one configured limit saw.
type LimitStats struct {
	Within, Over, Shadow uint64
}

func newStats() *stats { return &stats{} }

// record adds hits to l's counts: within, or over (and shadow when l is
// in shadow mode, where the caller answers OK).
func (st *stats) record(l *limit, code rlspb.RateLimitResponse_Code, hits uint64) {
	v, ok := st.byLimit.Load(l.path)
	if !ok {
		v, _ = st.byLimit.LoadOrStore(l.path, &limitCounts{})
	}
	lc := v.(*limitCounts)
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
}

// Stats returns the service's counts so far.
func (s *Service) Stats() Stats {
	out := Stats{Requests: s.stat.requests.Load(), Errors: s.stat.errors.Load(), Limits: map[string]LimitStats{}}
	s.stat.byLimit.Range(func(k, v any) bool {
		lc := v.(*limitCounts)
		out.Limits[k.(string)] = LimitStats{Within: lc.within.Load(), Over: lc.over.Load(), Shadow: lc.shadow.Load()}
		return true
	})
	return out
}
