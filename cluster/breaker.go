package cluster

import "sync/atomic"

// breaker is a consecutive-failure circuit breaker, lock-free: a dead Redis
// costs one fast failure per call instead of one timeout per call.
//
// closed: every call goes through; threshold failures in a row open it.
// open: calls fail at once until openFor has passed since it opened; then
// exactly one call (the CAS winner) probes as half-open. The probe's
// success closes the breaker; its failure opens it again for openFor.
type breaker struct {
	threshold int32
	openFor   int64 // ns
	state     atomic.Int32
	failures  atomic.Int32
	openedAt  atomic.Int64 // clock.Nanotime when it last opened
}

const (
	breakerClosed = iota
	breakerOpen
	breakerHalfOpen
)

func (b *breaker) init(threshold int, openFor int64) {
	b.threshold, b.openFor = int32(threshold), openFor
}

// allow reports whether a call may go to Redis now.
func (b *breaker) allow(now int64) bool {
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

// success closes a half-open breaker (its probe came back) and reports
// whether it did. An open one stays open: no call is let through while
// open, so a success then is a call admitted before it opened that
// finished late, and says nothing about Redis now (a reply read after the
// kill, say).
func (b *breaker) success() bool {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
	return b.state.Load() == breakerHalfOpen && b.state.CompareAndSwap(breakerHalfOpen, breakerClosed)
}

// failure counts a failed call and reports whether it opened the breaker
// (a closed one at the threshold; a failed half-open probe reopens it
// without a new report).
func (b *breaker) failure(now int64) bool {
	n := b.failures.Add(1)
	// The store of openedAt before state lets allow read it.
	if st := b.state.Load(); st == breakerHalfOpen || (st == breakerClosed && n >= b.threshold) {
		b.openedAt.Store(now)
		return b.state.Swap(breakerOpen) == breakerClosed
	}
	return false
}

// close closes the breaker from any state (the prober saw Redis answer and
// loaded the scripts) and reports whether it was open.
func (b *breaker) close() bool {
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

// open reports whether calls are being refused without trying Redis.
func (b *breaker) open() bool { return b.state.Load() != breakerClosed }
