package algo

import (
	"sync/atomic"
	"time"
)

// concurrency caps the permits in flight at capacity(limit): TryAcquire
// takes, release gives back. It never queues: a caller has no honest
// estimate of when someone else will finish, so maxWait is ignored and a
// refusal carries retryAfter 0 (unknown). Making Exit idempotent, so each
// permit is released once, is the engine's job.
type concurrency struct {
	inFlight atomic.Int64
	cap      atomic.Int64 // capacity(limit)
}

var _ Limiter = (*concurrency)(nil)

func newConcurrency(limit float64) *concurrency {
	c := &concurrency{}
	c.cap.Store(capacity(limit))
	return c
}

// TryAcquire may fill the whole cap.
func (c *concurrency) TryAcquire(now int64, n int, _ time.Duration) Decision {
	return c.TryAcquireClass(now, n, PriorityNormal, 1)
}

func (c *concurrency) TryAcquireClass(_ int64, n int, _ Priority, share float64) Decision {
	limit := c.cap.Load()
	return acquireUpTo(&c.inFlight, int64(n), ClassCap(limit, share), limit)
}

// Refund is a release: the permits were never used.
func (c *concurrency) Refund(_ int64, n int) { c.Release(n) }

// Release never takes the count below zero (see releaseFloor).
func (c *concurrency) Release(n int) { releaseFloor(&c.inFlight, n) }

// SetLimit changes the cap for new calls; calls in flight above a lowered
// cap finish normally.
func (c *concurrency) SetLimit(_ int64, limit float64) { c.cap.Store(capacity(limit)) }

func (c *concurrency) Remaining(int64) float64 {
	return float64(max(c.cap.Load()-c.inFlight.Load(), 0))
}
