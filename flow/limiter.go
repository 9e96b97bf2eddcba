package flow

import "time"

// limiter is one rule's admission state for one key (the single global key, or
// one user or IP). Each algorithm has its own file and constructor; the engine
// only sees this interface. Every method takes now from clock.Nanotime of the
// engine's clock, read once per Entry, so the decision logic never reads time.
//
// Implementations are safe for concurrent use and allocate nothing per call.
type limiter interface {
	// tryAcquire takes n permits at now when they are available at once, or,
	// for rate algorithms with maxWait > 0, when the caller's turn comes within
	// maxWait (the caller then waits decision.wait before going ahead).
	tryAcquire(now int64, n int, maxWait time.Duration) decision
	// refund gives back n permits taken by a tryAcquire whose call did not go
	// ahead because a later level or rule refused.
	refund(now int64, n int)
	// setLimit changes the effective limit (permits per window, or in flight),
	// e.g. when the adaptive controller scales the rule. Keeps state (a token
	// bucket keeps Guava's SetRate semantics; a window keeps its counts).
	setLimit(now int64, limit float64)
}

// Only the concurrency caps (concurrency, adaptive_concurrency) hold
// permits past Entry: they are holders, which the engine keeps and
// releases on Exit, so release is not part of limiter. Each algorithm also has remaining(now), the permits left at
// now, which the shared test suite checks.

// decision is the outcome of one limiter's tryAcquire: a small value, never
// allocated.
type decision struct {
	ok         bool
	wait       time.Duration // ok: queue this long before going ahead (leaky bucket, MaxWait)
	retryAfter time.Duration // !ok: honest time until this request would pass; 0 when unknown
	never      bool          // !ok: this request can never pass (e.g. more tokens than the limit)
	remaining  float64       // permits left after this decision
	reset      time.Duration // time until the quota is fully restored / the window resets
	shed       bool          // !ok: refused for the call's priority (the whole limit had room)
	limit      float64       // the limiter's own current limit (adaptive); 0: the rule's
}

// holder is a limiter whose permits stay taken until Exit releases them.
type holder interface {
	limiter
	release(n int)
}
