package clock

import (
	"context"
	"time"
)

// Clock is the source of time for limiters, engines and controllers.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep pauses for d. It returns ctx.Err() if ctx is done first, and nil
	// otherwise. A d <= 0 returns at once (with ctx.Err() if ctx is already done).
	Sleep(ctx context.Context, d time.Duration) error
}

// Monotonic is implemented by clocks that can report elapsed time cheaply.
type Monotonic interface {
	// Nanotime returns nanoseconds since a fixed origin chosen by the clock;
	// only differences between two readings of the same clock are meaningful.
	Nanotime() int64
}

// Nanotime reads c's monotonic time: c.Nanotime() when c implements Monotonic,
// otherwise c.Now() in Unix nanoseconds. Both Real and Fake implement Monotonic.
func Nanotime(c Clock) int64 {
	if m, ok := c.(Monotonic); ok {
		return m.Nanotime()
	}
	return c.Now().UnixNano()
}

// Origin is the wall time at which c's Nanotime reads 0, so that
// Origin(c).UnixNano() + Nanotime(c) is a Unix time. Limiters align their
// windows with it to whole multiples of the window since the Unix epoch, as
// Sentinel and Redis-side windows are, so every process agrees where a
// second starts. Real and Fake report it exactly; for another Clock it is
// derived from one Now and one Nanotime reading (the Unix epoch itself when
// the clock is not Monotonic).
func Origin(c Clock) time.Time {
	if o, ok := c.(interface{ Origin() time.Time }); ok {
		return o.Origin()
	}
	if _, ok := c.(Monotonic); !ok {
		return time.Unix(0, 0)
	}
	return c.Now().Add(-time.Duration(Nanotime(c)))
}

// Real returns the system clock. It is safe for concurrent use, and its
// Nanotime reads the monotonic counter, so wall-clock steps do not move it.
func Real() Clock { return realClock{} }

// origin is the instant the real clock's Nanotime reads 0: the moment the
// package was loaded, with its monotonic reading, so Nanotime measures on
// the monotonic clock (time.Since) and wall-clock steps do not move it.
var origin = time.Now()

type realClock struct{}

func (realClock) Now() time.Time    { return time.Now() }
func (realClock) Origin() time.Time { return origin.Round(0) }
func (realClock) Nanotime() int64   { return int64(time.Since(origin)) }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
