package clock

import (
	"context"
	"sync/atomic"
	"time"
)

// Fake is a virtual clock for tests. Its time moves only when Advance, Set or
// Sleep is called; Sleep advances it by the requested duration at once and
// returns. A Fake is safe for concurrent use: readers never lock.
type Fake struct {
	start   time.Time
	elapsed atomic.Int64 // nanoseconds since start; may go backwards only through Set
	sleeps  atomic.Int64
}

var _ Monotonic = (*Fake)(nil)

// NewFake returns a virtual clock that reads start until it is advanced.
func NewFake(start time.Time) *Fake {
	return &Fake{start: start}
}

// Now returns the virtual time.
func (f *Fake) Now() time.Time { return f.start.Add(time.Duration(f.elapsed.Load())) }

// Origin returns the clock's start: the time at which Nanotime reads 0.
func (f *Fake) Origin() time.Time { return f.start }

// Nanotime returns the virtual nanoseconds elapsed since the clock's start.
func (f *Fake) Nanotime() int64 { return f.elapsed.Load() }

// Advance moves the virtual time forward by d; a negative d is ignored.
func (f *Fake) Advance(d time.Duration) {
	if d > 0 {
		f.elapsed.Add(int64(d))
	}
}

// Set moves the virtual time to t, forwards or backwards. Going backwards is
// for tests of clock skew; limiters must tolerate it.
func (f *Fake) Set(t time.Time) { f.elapsed.Store(int64(t.Sub(f.start))) }

// Sleep advances the virtual time by d at once and returns nil, or returns
// ctx.Err() without advancing when ctx is already done.
func (f *Fake) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.sleeps.Add(1)
	f.Advance(d)
	return nil
}

// Sleeps reports how many times Sleep has been called, so tests can assert
// that a limiter did (or did not) wait.
func (f *Fake) Sleeps() int { return int(f.sleeps.Load()) }
