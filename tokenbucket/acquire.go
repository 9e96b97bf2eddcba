package tokenbucket

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// ErrWouldPassDeadline is returned by Acquire when the wait would outlast the
// context's deadline. It matches context.DeadlineExceeded with errors.Is.
var ErrWouldPassDeadline = fmt.Errorf("tokenbucket: wait would pass the context deadline: %w", context.DeadlineExceeded)

// Acquire takes permits, waiting on the limiter's clock until they may be
// used, and returns the time waited (Guava's acquire). If ctx is done, or its
// deadline would pass before the wait ends, Acquire returns at once with an
// error and reserves nothing; if ctx ends during the wait, the permits are
// refunded.
func (l *Limiter) Acquire(ctx context.Context, permits int) (time.Duration, error) {
	if permits <= 0 {
		return 0, errPermits(permits)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// With a deadline: reserve only if the wait ends before it, as
	// TryAcquire with the time left; without one, whatever the wait.
	timeout := time.Duration(unbounded)
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), 0)
	}
	r, _ := l.reserve(clock.Nanotime(l.rate.Load().clk), permits, timeout) // permits > 0
	if !r.OK {
		return 0, ErrWouldPassDeadline
	}
	if err := l.sleep(ctx, permits, r.Wait); err != nil {
		return 0, err
	}
	return r.Wait, nil
}

// TryAcquire takes permits if they can be used within timeout (negative counts
// as 0), then waits on the limiter's clock for them; otherwise it returns false
// at once (Guava's tryAcquire). A ctx deadline shorter than timeout shortens
// it. If ctx ends during the wait the permits are refunded and its error
// returned.
func (l *Limiter) TryAcquire(ctx context.Context, permits int, timeout time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if timeout > 0 {
		if d, ok := ctx.Deadline(); ok {
			timeout = min(timeout, time.Until(d))
		}
	}
	r, err := l.TryReserveAt(clock.Nanotime(l.rate.Load().clk), permits, timeout)
	if err != nil || !r.OK {
		return false, err
	}
	if err := l.sleep(ctx, permits, r.Wait); err != nil {
		return false, err
	}
	return true, nil
}

// Reserve takes permits at once and returns how long the caller must wait
// before using them (Guava's reserve). It never sleeps.
func (l *Limiter) Reserve(permits int) (time.Duration, error) {
	r, err := l.reserve(clock.Nanotime(l.rate.Load().clk), permits, unbounded)
	return r.Wait, err
}

// sleep waits on the limiter's clock; if ctx ends first the permits go back.
func (l *Limiter) sleep(ctx context.Context, permits int, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	clk := l.rate.Load().clk
	err := clk.Sleep(ctx, d)
	if err != nil {
		l.Refund(clock.Nanotime(clk), permits)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return fmt.Errorf("tokenbucket: sleeping %v: %w", d, err)
	}
	return nil
}
