package algo

import "time"

// Limiter is one rule's admission state for one key (the single global key,
// or one user, IP or parameter value). Each algorithm has its own file and
// constructor; New picks one from a Spec. Every method takes now from the
// engine's clock (clock.Nanotime), read once per call, so the decision logic
// never reads time.
//
// Implementations are safe for concurrent use and allocate nothing per call.
type Limiter interface {
	// TryAcquire takes n permits at now when they are available at once,
	// or, for rate algorithms with maxWait > 0, when the caller's turn comes
	// within maxWait (the caller then waits Decision.Wait before going ahead).
	TryAcquire(now int64, n int, maxWait time.Duration) Decision
	// Refund gives back n permits taken by a TryAcquire whose call did not
	// go ahead because a later level or rule refused. at is the moment the
	// permits were taken for: the call's now, or now+Decision.Wait when it
	// queued (see New).
	Refund(at int64, n int)
	// SetLimit changes the effective limit (permits per window, or in
	// flight), e.g. when the adaptive controller scales the rule. State is
	// kept: a token bucket keeps Guava's SetRate semantics, a window keeps
	// its counts.
	SetLimit(now int64, limit float64)
}

// Holder is a Limiter whose permits stay taken until the call ends: the
// concurrency caps (concurrency, adaptive_concurrency). The engine keeps
// the permits a call took from a Holder and releases them at Exit, so
// Release is not part of Limiter.
type Holder interface {
	Limiter
	Release(n int)
}

// Windowed is a Limiter counting in whole windows (fixed_window): Window
// is the index of the window now falls in, on the same epoch-aligned grid
// the limiter counts in.
type Windowed interface {
	Window(now int64) int64
}

// Remainer reports the permits left at now without taking any. Every
// algorithm has it (the shared test suite checks it); the engine asks for
// it only to describe a key, never on the admission path.
type Remainer interface {
	Remaining(now int64) float64
}

// ClassLimiter is the hook a limiter with priority reserves offers: a
// TryAcquire for a call of class p that may fill only share (0..1] of the
// limit. The engine keeps the share of each class on the rule, not in each
// key's limiter, so a tracked key costs no more.
type ClassLimiter interface {
	TryAcquireClass(now int64, n int, p Priority, share float64) Decision
}

// RTTObserver is the hook Exit feeds response times through: at is the
// Exit's clock reading, rtt the call's time since Entry (ns).
type RTTObserver interface {
	Observe(at, rtt int64)
}

// Decision is the outcome of one TryAcquire, returned by value so that
// deciding never allocates. It has four fields of eight bytes at most on
// purpose: the compiler keeps a struct that small in registers, while a
// larger one is returned through memory and read back by the caller right
// after the callee stored it, a stall on every call.
type Decision struct {
	Verdict Verdict // Granted, or why not
	// Wait is, when Granted, how long the call must queue before going
	// ahead (leaky bucket, MaxWait); when refused, the honest time until
	// this request would pass, 0 when unknown.
	Wait      time.Duration
	Remaining float64       // permits left after this decision
	Reset     time.Duration // time until the quota is fully restored / the window resets
}

// OK reports whether the permits were granted.
func (d Decision) OK() bool { return d.Verdict == Granted }

// Verdict is how a TryAcquire ended. The zero Verdict is Refused, so the
// zero Decision refuses with nothing more to say.
type Verdict uint8

const (
	Refused Verdict = iota // not now: Decision.Wait says when
	Granted                // taken: Decision.Wait says how long to queue first
	Never                  // refused, and this request can never pass (e.g. more permits than the limit)
	Shed                   // refused for the call's priority class: the whole limit had room
)

// OwnLimit is a Limiter that sets its limit itself (adaptive_concurrency).
// The engine asks it for that limit only when it refuses a call, to report
// it, so the Decision of every call need not carry it.
type OwnLimit interface {
	Limit() float64
}
