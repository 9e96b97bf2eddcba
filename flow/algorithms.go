package flow

import (
	"fmt"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow/internal/algo"
)

// The algorithms live in package algo, behind algo.Limiter and built from
// an algo.Spec; this file is the engine's side of that boundary: what a
// Rule tells an algorithm, and the public types algo's values convert to.

// limiter is one rule's admission state for one key: the name the
// engine's tables and checks use for algo.Limiter.
type limiter = algo.Limiter

// Bounds the validation of rules enforces for the algorithms.
const (
	maxSlidingWindowLimit = algo.MaxSlidingWindowLimit
	minBreakerWd          = algo.MinBreakerWindow
	minBreakerBucket      = algo.MinBreakerBucket
)

// newLimiter builds the limiter of r (defaults applied) for one key at the
// effective limit (r.Limit scaled by the adaptive factor or a cluster
// share); now is clock.Nanotime(clk).
func newLimiter(r *Rule, limit float64, clk clock.Clock, now int64) (limiter, error) {
	if _, ok := kindOf(r.Algorithm); !ok {
		return nil, fmt.Errorf("flow: rule %q: algorithm %v has no limiter", r.ID, r.Algorithm)
	}
	l, err := algo.New(specOf(r), limit, clk, now)
	if err != nil {
		return nil, fmt.Errorf("flow: rule %q: %w", r.ID, err)
	}
	return l, nil
}

// specOf is what r's algorithm reads of r, which has its defaults applied.
func specOf(r *Rule) algo.Spec {
	k, _ := kindOf(r.Algorithm)
	return algo.Spec{
		Kind:       k,
		Limit:      r.Limit,
		Window:     r.Window,
		Burst:      r.Burst,
		Warmup:     r.Warmup,
		ColdFactor: r.ColdFactor,
		Buckets:    r.Buckets,
		Breaker:    *breakerSpecOf(r),
		Adaptive: algo.AdaptiveSpec{
			InitialLimit: r.InitialLimit,
			MinLimit:     r.MinLimit,
			MaxLimit:     r.MaxLimit,
			Tolerance:    r.Tolerance,
			Smoothing:    r.Smoothing,
		},
		Throttle: algo.ThrottleSpec{K: r.K},
		Budget:   algo.BudgetSpec{Ratio: r.Ratio, MinPerSecond: r.MinPerSecond, TTL: r.TTL},
	}
}

// breakerSpecOf is what a circuit breaker reads of r. The breakers of a
// rule keep no copy of it (one per tracked key would cost memory): the
// engine hands it to each Check and Record, built afresh from r on the
// stack, which costs a few loads.
func breakerSpecOf(r *Rule) *algo.BreakerSpec {
	return &algo.BreakerSpec{
		Strategy:    algo.BreakerStrategy(r.Strategy),
		Threshold:   r.Threshold,
		MinRequests: r.MinRequests,
		SlowCall:    r.SlowCall,
		OpenFor:     r.OpenFor,
		Probes:      r.Probes,
	}
}

// kindOf is the algo.Kind of a; the lists (allow, deny) have none: they
// refuse by value and keep no limiter (lists.go).
func kindOf(a Algorithm) (algo.Kind, bool) {
	switch a {
	case AlgoTokenBucket:
		return algo.TokenBucket, true
	case AlgoWarmUp:
		return algo.WarmUp, true
	case AlgoLeakyBucket:
		return algo.LeakyBucket, true
	case AlgoFixedWindow:
		return algo.FixedWindow, true
	case AlgoSlidingWindow:
		return algo.SlidingWindow, true
	case AlgoSlidingLog:
		return algo.SlidingLog, true
	case AlgoConcurrency:
		return algo.Concurrency, true
	case AlgoCircuitBreaker:
		return algo.CircuitBreaker, true
	case AlgoAdaptiveConcurrency:
		return algo.AdaptiveConcurrency, true
	case AlgoSentinelWindow:
		return algo.SentinelWindow, true
	case AlgoSentinelWarmUp:
		return algo.SentinelWarmUp, true
	case AlgoSentinelHotspot:
		return algo.SentinelHotspot, true
	case AlgoClientThrottle:
		return algo.ClientThrottle, true
	case AlgoRetryBudget:
		return algo.RetryBudget, true
	}
	return 0, false
}

// AdaptiveStats is the state of an adaptive_concurrency rule's limiter.
type AdaptiveStats struct {
	Limit    int64         // the current concurrency limit
	InFlight int64         // calls holding a permit now
	ShortRTT time.Duration // mean response time of the last window (0 before the first)
	LongRTT  time.Duration // the long-term (no-queue) response time estimate
}

// adaptiveStatsOf reads lim's AdaptiveStats when it is an adaptive
// concurrency limiter.
func adaptiveStatsOf(lim limiter) (AdaptiveStats, bool) {
	a, ok := lim.(algo.AdaptiveReporter)
	if !ok {
		return AdaptiveStats{}, false
	}
	return AdaptiveStats(a.AdaptiveStats()), true
}
