package guard

import "sync/atomic"

// Breaker is a consecutive-failure circuit breaker, lock-free: a dead Redis
// (or replica) costs one fast failure per call instead of one timeout per
// call.
//
// closed: every call goes through; threshold failures in a row open it.
// open: calls fail at once until openFor has passed since it opened; then
// exactly one call (the CAS winner) probes as half-open. The probe's
// Success closes the breaker; its failure opens it again for openFor.
//
// A streak of timeouts must also last span (the per-call timeout): calls
// in flight during one hiccup (SCRIPT FLUSH blocking Redis, a GC pause
// here) time out together, and that is one event, not threshold; a Redis
// that stays frozen keeps failing the calls sent after them. A refused
// connection needs no span: Redis is down.
//
// A timeout is not held against the server (FailedCall) when the evidence
// says the deadline was missed on our side:
//   - some other call to the server got its answer after the timed-out
//     one was sent (SucceededAt): the server was answering, and this call
//     waited in a queue in front of the socket or in a starved process;
//   - the timeout was seen more than half a span after its deadline: the
//     goroutine woke late, so this process was starved of CPU (a loaded
//     host, a GC pause), and an answer may well have been in the socket.
//     A frozen server seen by a process that runs on time is seen at the
//     deadline, and counts.
//
// Refused connections, resets and other errors always count. So a loaded
// host costs the calls that time out their fallback, but it does not
// open the breaker for every call on the server.
type Breaker struct {
	threshold int32
	openFor   int64 // ns
	span      int64 // ns
	state     atomic.Int32
	failures  atomic.Int32
	streakAt  atomic.Int64 // clock.Nanotime of the streak's first failure
	openedAt  atomic.Int64 // clock.Nanotime when it last opened
	okAt      atomic.Int64 // clock.Nanotime of the latest answer SucceededAt saw
}

const (
	breakerClosed = iota
	breakerOpen
	breakerHalfOpen
)

// Init sets the threshold of consecutive failures and openFor and span
// in nanoseconds.
func (b *Breaker) Init(threshold int, openFor, span int64) {
	b.threshold, b.openFor, b.span = int32(threshold), openFor, span
}

// Allow reports whether a call may go out now.
func (b *Breaker) Allow(now int64) bool {
	switch b.state.Load() {
	case breakerClosed:
		return true
	case breakerOpen:
		// One caller wins the move to half-open and probes; the others
		// keep failing fast until it reports.
		return now-b.openedAt.Load() >= b.openFor && b.state.CompareAndSwap(breakerOpen, breakerHalfOpen)
	default: // half-open: a probe is in flight
		return false
	}
}

// Success closes a half-open breaker (its probe came back) and reports
// whether it did. An open one stays open: no call is let through while
// open, so a success then is a call admitted before it opened that
// finished late, and says nothing about Redis now (a reply read after the
// kill, say).
func (b *Breaker) Success() bool {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
	return b.state.Load() == breakerHalfOpen && b.state.CompareAndSwap(breakerHalfOpen, breakerClosed)
}

// SucceededAt is Success for a call whose answer came at now; a timeout
// of a call sent before now is then not counted (see FailedCall).
func (b *Breaker) SucceededAt(now int64) bool {
	if b.okAt.Load() < now {
		b.okAt.Store(now) // racing stores may keep a slightly older time: harmless
	}
	return b.Success()
}

// FailedCall is Failure for a call sent at sent that failed at now. A
// timeout is ignored (neither counted nor reported) when another call got
// its answer at or after sent, or when it was seen more than 1.5 spans
// after sent (see Breaker), while the breaker is closed; a half-open
// breaker's failed probe always reopens it.
func (b *Breaker) FailedCall(sent, now int64, timedOut bool) bool {
	// Only while closed: a half-open breaker's probe must settle it one
	// way or the other, or no call would ever be let through again.
	if timedOut && b.state.Load() == breakerClosed && (b.okAt.Load() >= sent || now-sent > b.span+b.span/2) {
		return false
	}
	return b.Failure(now, timedOut)
}

// Failure counts a failed call (timedOut: it ran out of time) and reports
// whether it opened the breaker (a closed one at the threshold; a failed
// half-open probe reopens it without a new report).
func (b *Breaker) Failure(now int64, timedOut bool) bool {
	n := b.failures.Add(1)
	if n == 1 {
		b.streakAt.Store(now)
	}
	enough := n >= b.threshold && (!timedOut || now-b.streakAt.Load() >= b.span)
	// The store of openedAt before state lets allow read it.
	if st := b.state.Load(); st == breakerHalfOpen || (st == breakerClosed && enough) {
		b.openedAt.Store(now)
		return b.state.Swap(breakerOpen) == breakerClosed
	}
	return false
}

// Close closes the breaker from any state (the prober saw Redis answer and
// loaded the scripts) and reports whether it was open.
func (b *Breaker) Close() bool {
	for {
		st := b.state.Load()
		if st == breakerClosed {
			return false
		}
		if b.state.CompareAndSwap(st, breakerClosed) {
			b.failures.Store(0)
			return true
		}
	}
}

// Open reports whether calls are being refused without trying Redis.
func (b *Breaker) Open() bool { return b.state.Load() != breakerClosed }

// OpenedAt is the clock.Nanotime when the breaker last opened.
func (b *Breaker) OpenedAt() int64 { return b.openedAt.Load() }
