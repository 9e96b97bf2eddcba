package sentinel

import (
	"context"
	"sync/atomic"
	"time"
)

// vclock is the one virtual timeline both engines read: it is
// sentinel-golang's util.Clock and flowgate's clock.Clock (with Monotonic)
// at once. Sleep returns at once without moving time, so a call that is
// told to wait (throttling, maxWait) does not shift the other engine's
// timeline; the trace alone advances time.
type vclock struct {
	base  time.Time
	ns    atomic.Int64
	slept atomic.Int64 // the latest wait sentinel-golang asked Sleep for
}

func newVClock(base time.Time) *vclock { return &vclock{base: base} }

func (c *vclock) Now() time.Time            { return c.base.Add(time.Duration(c.ns.Load())) }
func (c *vclock) Nanotime() int64           { return c.ns.Load() }
func (c *vclock) CurrentTimeMillis() uint64 { return uint64(c.Now().UnixMilli()) }
func (c *vclock) CurrentTimeNano() uint64   { return uint64(c.Now().UnixNano()) }

// Sleep satisfies sentinel-golang's util.Clock; it records the wait so that
// the wait Sentinel gives a queued call can be compared with flowgate's.
func (c *vclock) Sleep(d time.Duration) { c.slept.Store(int64(d)) }

// advanceTo moves time forward to t (never back).
func (c *vclock) advanceTo(t time.Time) {
	if d := t.Sub(c.Now()); d > 0 {
		c.ns.Add(int64(d))
	}
}

// fgClock is the flowgate view of the same timeline: clock.Clock's Sleep
// takes a context.
type fgClock struct{ *vclock }

func (c fgClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }
