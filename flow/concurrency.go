package flow

import (
	"sync/atomic"
	"time"
)

// concurrency caps the permits in flight at capacity(limit): tryAcquire
// takes, release gives back. It never queues: a caller has no honest
// estimate of when someone else will finish, so maxWait is ignored and a
// refusal carries retryAfter 0 (unknown). Making Exit idempotent, so each
// permit is released once, is the engine's job.
type concurrency struct {
	inFlight atomic.Int64
	cap      atomic.Int64 // capacity(limit)
}

var _ limiter = (*concurrency)(nil)

func newConcurrency(limit float64) *concurrency {
	c := &concurrency{}
	c.cap.Store(capacity(limit))
	return c
}

func (c *concurrency) tryAcquire(_ int64, n int, _ time.Duration) decision {
	k := int64(n)
	limit := c.cap.Load()
	if k > limit {
		return decision{never: true}
	}
	for {
		cur := c.inFlight.Load()
		if cur+k > limit {
			return decision{}
		}
		// A failed CAS means another call took or released permits in
		// between: decide again on the new count.
		if c.inFlight.CompareAndSwap(cur, cur+k) {
			return decision{ok: true, remaining: float64(limit - cur - k)}
		}
	}
}

// refund is a release: the permits were never used.
func (c *concurrency) refund(_ int64, n int) { c.release(n) }

// release never takes the count below zero: a permit released twice (an
// engine bug) must not open room for more than the cap later.
func (c *concurrency) release(n int) {
	for {
		cur := c.inFlight.Load()
		if c.inFlight.CompareAndSwap(cur, max(cur-int64(n), 0)) {
			return
		}
	}
}

// setLimit changes the cap for new calls; calls in flight above a lowered
// cap finish normally.
func (c *concurrency) setLimit(_ int64, limit float64) { c.cap.Store(capacity(limit)) }

func (c *concurrency) remaining(int64) float64 {
	return float64(max(c.cap.Load()-c.inFlight.Load(), 0))
}
