package flow

import (
	"fmt"
	"math"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// newLimiter builds the limiter of one rule for one key. r has its defaults
// applied; limit is the effective limit (r.Limit scaled by the adaptive
// factor) and is used instead of r.Limit. now is clock.Nanotime(clk).
//
// Conventions shared by every algorithm:
//   - n >= 1 (the engine guarantees it);
//   - the counting algorithms (windows, log, concurrency) admit whole permits:
//     capacity(limit) = floor(limit), but at least 1, so an adaptive factor
//     that scales a limit of 1 below 1 slows the rule down instead of closing
//     it for good;
//   - refund(at, n) is called with the moment the permits were taken for:
//     the call's now, or now+decision.wait when it queued. Every limiter is
//     safe when given the plain now for a queued call too: where it cannot
//     tell whose permits are whose, it keeps them (it never gives back more
//     than was taken).
func newLimiter(r *Rule, limit float64, clk clock.Clock, now int64) (limiter, error) {
	if r.Algorithm == AlgoCircuitBreaker { // no limit: it sits in key tables as one (see breaker)
		return newBreaker(r, now), nil
	}
	if r.Algorithm == AlgoAdaptiveConcurrency {
		return newAdaptiveConcurrency(r), nil
	}
	if !(limit > 0) || math.IsInf(limit, 1) {
		return nil, fmt.Errorf("flow: rule %q: effective limit %v must be finite and > 0", r.ID, limit)
	}
	if r.Window <= 0 {
		return nil, fmt.Errorf("flow: rule %q: window %v must be > 0", r.ID, r.Window)
	}
	switch r.Algorithm {
	case AlgoTokenBucket:
		return newTokenBucket(r, limit, clk)
	case AlgoWarmUp:
		return newWarmUp(r, limit, clk)
	case AlgoLeakyBucket:
		return newLeakyBucket(r.Window, limit, now), nil
	case AlgoFixedWindow:
		return newFixedWindow(r.Window, limit, now, clock.Origin(clk).UnixNano()), nil
	case AlgoSlidingWindow:
		return newSlidingWindow(r.Window, r.Buckets, limit, now, clock.Origin(clk).UnixNano())
	case AlgoSentinelWindow:
		return newSentinelWindow(r.Window, limit, clk, now), nil
	case AlgoSentinelHotspot:
		return newSentinelHotspot(r, limit, clk, now), nil
	case AlgoSentinelWarmUp:
		return newSentinelWarmUp(r, limit, clk, now), nil
	case AlgoSlidingLog:
		return newSlidingLog(r.Window, max(r.Limit, limit), limit)
	case AlgoConcurrency:
		return newConcurrency(limit), nil
	}
	return nil, fmt.Errorf("flow: rule %q: unknown algorithm %v", r.ID, r.Algorithm)
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
