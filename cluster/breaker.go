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

// success closes a half-open breaker (its probe came back). An open one
// stays open: no call is let through while open, so a success then is a
// call admitted before it opened that finished late, and says nothing
// about Redis now (a reply read after the kill, say).
func (b *breaker) success() {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
	if b.state.Load() == breakerHalfOpen {
		b.state.CompareAndSwap(breakerHalfOpen, breakerClosed)
	}
}

func (b *breaker) failure(now int64) {
	n := b.failures.Add(1)
	// A failed probe reopens at once; a closed breaker opens at the
	// threshold (the store of openedAt before state lets allow read it).
	if b.state.Load() == breakerHalfOpen || n >= b.threshold {
		b.openedAt.Store(now)
		b.state.Store(breakerOpen)
	}
}

// open reports whether calls are being refused without trying Redis.
func (b *breaker) open() bool { return b.state.Load() != breakerClosed }
