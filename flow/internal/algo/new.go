package algo

import (
	"fmt"
	"math"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// Kind names an algorithm. The engine maps its public Algorithm onto it;
// the lists (allow, deny) are not limiters and have no Kind.
type Kind uint8

// The algorithms, one file each.
const (
	TokenBucket         Kind = iota // Guava SmoothBursty (token_bucket.go)
	WarmUp                          // Guava SmoothWarmingUp (warm_up.go)
	LeakyBucket                     // constant spacing, queueing with maxWait (leaky_bucket.go)
	FixedWindow                     // one counter per Unix-aligned window (fixed_window.go)
	SlidingWindow                   // sub-window counters, the oldest weighted (sliding_window.go)
	SlidingLog                      // exact: one timestamp per permit (sliding_log.go)
	Concurrency                     // a cap on permits in flight (concurrency.go)
	CircuitBreaker                  // admits everything as a Limiter; see Breaker (breaker.go)
	AdaptiveConcurrency             // a cap that finds its own limit (adaptive_concurrency.go)
	SentinelWindow                  // Alibaba Sentinel's QPS window (sentinel_window.go)
	SentinelWarmUp                  // Alibaba Sentinel's warm-up (sentinel_warm_up.go)
	SentinelHotspot                 // sentinel-golang's per-value hotspot limiter (sentinel_hotspot.go)
	ClientThrottle                  // Google SRE adaptive throttling of outgoing calls (client_throttle.go)
	RetryBudget                     // Finagle's retry budget (retry_budget.go)
	numKinds
)

var kindNames = [numKinds]string{
	"token_bucket", "warm_up", "leaky_bucket", "fixed_window", "sliding_window", "sliding_log", "concurrency",
	"circuit_breaker", "adaptive_concurrency", "sentinel_window", "sentinel_warm_up", "sentinel_hotspot",
	"client_throttle", "retry_budget",
}

// String returns the algorithm's rule-document name, e.g. "token_bucket".
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Spec is what the algorithms read of a rule, with its defaults applied
// (the engine's Rule.WithDefaults). Each field says which algorithms read
// it; the others ignore it.
type Spec struct {
	Kind Kind
	// Limit is the rule's nominal limit: permits per Window, or in flight.
	// New takes the effective limit apart (scaled by an adaptive factor or
	// a cluster share); Limit is what Burst is stated for (token_bucket)
	// and what a sliding_log sizes its ring for.
	Limit float64
	// Window is the span Limit counts over (every rate algorithm and the
	// breaker); > 0.
	Window time.Duration
	// Burst is token_bucket's largest store of permits at Limit (it scales
	// with the effective limit), and sentinel_hotspot's extra tokens on top
	// of the limit (Sentinel's burstCount).
	Burst float64
	// Warmup and ColdFactor shape warm_up and sentinel_warm_up: the time of
	// saturated demand to reach the full rate, and how much slower a cold
	// rule starts.
	Warmup     time.Duration
	ColdFactor float64
	// Buckets is the number of sub-windows of sliding_window and of a
	// circuit_breaker's statistics window; >= 1 (a breaker reads < 1 as
	// DefaultBreakerBuckets).
	Buckets int
	// Breaker is a circuit_breaker's settings.
	Breaker BreakerSpec
	// Adaptive is an adaptive_concurrency's settings.
	Adaptive AdaptiveSpec
	// Throttle is a client_throttle's settings (its window is Window).
	Throttle ThrottleSpec
	// Budget is a retry_budget's settings.
	Budget BudgetSpec
}

// New builds the limiter spec describes, for one key. limit is the
// effective limit, used instead of spec.Limit; clk is the engine's clock
// and now its reading (clock.Nanotime(clk)), from which windows and
// buckets start.
//
// Conventions shared by every algorithm:
//   - n >= 1 (the engine guarantees it);
//   - the counting algorithms (windows, log, concurrency) admit whole permits:
//     capacity(limit) = floor(limit), but at least 1, so an adaptive factor
//     that scales a limit of 1 below 1 slows the rule down instead of closing
//     it for good;
//   - a request of more permits than the limiter can ever grant at once (a
//     counting algorithm's or leaky_bucket's capacity, a token bucket's larger
//     of limit and burst, a hotspot's limit plus burst) is refused with
//     the Verdict Never before anything is taken, queued or not;
//   - Refund(at, n) is called with the moment the permits were taken for:
//     the call's now, or now+Decision.Wait when it queued. Every limiter is
//     safe when given the plain now for a queued call too: where it cannot
//     tell whose permits are whose, it keeps them (it never gives back more
//     than was taken).
func New(spec Spec, limit float64, clk clock.Clock, now int64) (Limiter, error) {
	s := &spec
	if s.Kind == CircuitBreaker { // no limit: it sits in key tables as one (see Breaker)
		var origin int64
		if clk != nil {
			origin = clock.Origin(clk).UnixNano()
		}
		return newBreaker(s.Window, s.Buckets, now, origin), nil
	}
	if s.Kind == AdaptiveConcurrency {
		return newAdaptiveConcurrency(s.Adaptive), nil
	}
	if s.Kind == ClientThrottle { // no limit: K and the backend's answers decide
		if s.Window <= 0 {
			return nil, fmt.Errorf("window %v must be > 0", s.Window)
		}
		return newThrottle(s.Window, s.Throttle, now), nil
	}
	if s.Kind == RetryBudget {
		if s.Budget.TTL <= 0 || !(s.Budget.Ratio >= 0) || !(s.Budget.MinPerSecond >= 0) {
			return nil, fmt.Errorf("retry budget %+v: ttl must be > 0, ratio and minPerSecond >= 0", s.Budget)
		}
		return newBudget(s.Budget, now), nil
	}
	if !(limit > 0) || math.IsInf(limit, 1) {
		return nil, fmt.Errorf("effective limit %v must be finite and > 0", limit)
	}
	if s.Window <= 0 {
		return nil, fmt.Errorf("window %v must be > 0", s.Window)
	}
	switch s.Kind {
	case TokenBucket:
		return newTokenBucket(s, limit, clk)
	case WarmUp:
		return newWarmUp(s, limit, clk)
	case LeakyBucket:
		return newLeakyBucket(s.Window, limit, now), nil
	case FixedWindow:
		return newFixedWindow(s.Window, limit, now, clock.Origin(clk).UnixNano()), nil
	case SlidingWindow:
		return newSlidingWindow(s.Window, s.Buckets, limit, now, clock.Origin(clk).UnixNano())
	case SentinelWindow:
		return newSentinelWindow(s.Window, limit, clk, now), nil
	case SentinelHotspot:
		return newSentinelHotspot(s, limit, clk, now), nil
	case SentinelWarmUp:
		return newSentinelWarmUp(s, limit, clk, now), nil
	case SlidingLog:
		return newSlidingLog(s.Window, max(s.Limit, limit), limit)
	case Concurrency:
		return newConcurrency(limit), nil
	}
	return nil, fmt.Errorf("unknown algorithm kind %d", s.Kind)
}

// capacity is the whole permits a counting algorithm admits per window (or in
// flight) for a limit. The epsilon keeps 10*0.3 from flooring to 2.
func capacity(limit float64) int64 {
	c := math.Floor(limit + 1e-9)
	if c < 1 {
		return 1
	}
	if c > math.MaxInt32 {
		return math.MaxInt32
	}
	return int64(c)
}

// floorMod is a - b*floorDiv(a, b): in [0, b) for b > 0.
func floorMod(a, b int64) int64 { return a - b*floorDiv(a, b) }

// floorDiv divides rounding toward minus infinity, so window indexes stay
// right for the negative readings a Fake clock set backwards can give.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// nonNeg clamps a duration that should not be negative (clock skew).
func nonNeg(d int64) time.Duration {
	if d < 0 {
		return 0
	}
	return time.Duration(d)
}
