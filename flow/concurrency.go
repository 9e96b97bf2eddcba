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

// tryAcquire may fill the whole cap.
func (c *concurrency) tryAcquire(now int64, n int, _ time.Duration) decision {
	return c.tryAcquireClass(now, n, PriorityNormal, 1)
}

func (c *concurrency) tryAcquireClass(_ int64, n int, _ Priority, share float64) decision {
	limit := c.cap.Load()
	return acquireUpTo(&c.inFlight, int64(n), classCap(limit, share), limit)
}

// refund is a release: the permits were never used.
func (c *concurrency) refund(_ int64, n int) { c.release(n) }

// release never takes the count below zero (see releaseFloor).
func (c *concurrency) release(n int) { releaseFloor(&c.inFlight, n) }

// setLimit changes the cap for new calls; calls in flight above a lowered
// cap finish normally.
func (c *concurrency) setLimit(_ int64, limit float64) { c.cap.Store(capacity(limit)) }

func (c *concurrency) remaining(int64) float64 {
	return float64(max(c.cap.Load()-c.inFlight.Load(), 0))
}
