package flow

import (
	"cmp"
	"math"
	"time"
)

// maxBreakerCount bounds an error_count threshold and MinRequests: the
// window keeps 20-bit counts per bucket (see breakerWindow).
const maxBreakerCount = 100000

// The checks of a circuit breaker's own fields; which rules take them, and
// the defaults and ranges of the others, are in the table (rule_table.go).

func checkStrategy(r *Rule, bad badFunc) {
	switch {
	case r.Strategy == 0:
		bad("strategy", "required for circuit_breaker rules (error_ratio, error_count or slow_ratio)")
	case r.Strategy >= numStrategies:
		bad("strategy", "unknown %v", r.Strategy)
	}
}

// checkThreshold checks a breaker's threshold against its strategy: a
// whole count for error_count, a ratio for the others.
func checkThreshold(r *Rule, bad badFunc) {
	t := r.Threshold
	switch {
	case math.IsNaN(t) || math.IsInf(t, 0):
		bad("threshold", "must be a finite number, not %v", t)
	case t == 0:
		bad("threshold", "required for circuit_breaker rules")
	case r.Strategy == BreakerErrorCount && (t < 1 || t != math.Trunc(t) || t > maxBreakerCount):
		bad("threshold", "must be a whole count in [1, %d] for error_count, not %v", maxBreakerCount, t)
	case r.Strategy != BreakerErrorCount && (t <= 0 || t > 1):
		bad("threshold", "must be a ratio in (0, 1] for %v, not %v", r.Strategy, t)
	}
}

// checkBreakerBuckets keeps a breaker's buckets at least minBreakerBucket
// long (a window shorter than minBreakerWd is checkWindow's to report).
func checkBreakerBuckets(r *Rule, bad badFunc) {
	if r.Algorithm != AlgoCircuitBreaker || r.Buckets < 1 {
		return
	}
	w := cmp.Or(r.Window, DefaultWindow)
	if w >= minBreakerWd && w/time.Duration(r.Buckets) < minBreakerBucket {
		bad("buckets", "at most %d for a %v window (buckets of at least %v), not %d",
			int64(w/minBreakerBucket), w, minBreakerBucket, r.Buckets)
	}
}
