package flow

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy shapes Engine.Retry. The zero value is usable: every field
// documents its default.
type RetryPolicy struct {
	// Attempts is the most tries in all, the first included. Default 4
	// (a first attempt and up to 3 retries).
	Attempts int
	// BaseDelay is the backoff before the first retry; each later retry
	// doubles it, up to MaxDelay, and a random jitter takes up to half of
	// it away, so that clients refused together do not retry together.
	// Defaults 50ms and 2s.
	BaseDelay, MaxDelay time.Duration
}

// RetryableError asks Engine.Retry to try again: fn returns it for a
// failure worth another attempt (an overloaded backend, a reset
// connection) of an idempotent call. After is the backend's Retry-After
// (0: none): the retry waits at least that long, and not at all when it is
// beyond MaxDelay.
type RetryableError struct {
	Err   error
	After time.Duration
}

func (e *RetryableError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *RetryableError) Unwrap() error { return e.Err }

// Retry runs fn under a permit for resource and, while fn returns a
// *RetryableError, again, up to p.Attempts tries, with exponential backoff
// and jitter on the engine's clock. Every retry is entered WithRetry, so a
// retry_budget rule of resource decides whether it may go: a retry it
// refuses ends Retry with fn's last error. Each attempt exits its permit
// with fn's error (WithError), so breakers and throttles see every answer.
// A first attempt refused returns the *BlockError. The returned error is
// fn's last, unwrapped from RetryableError. ctx bounds the backoff waits.
func (e *Engine) Retry(ctx context.Context, resource string, p RetryPolicy, fn func(context.Context) error, opts ...EntryOption) error {
	attempts, base, maxDelay := p.Attempts, p.BaseDelay, p.MaxDelay
	if attempts <= 0 {
		attempts = 4
	}
	if base <= 0 {
		base = 50 * time.Millisecond
	}
	if maxDelay <= 0 {
		maxDelay = 2 * time.Second
	}
	first := append(opts[:len(opts):len(opts)], WithContext(ctx))
	retry := append(first[:len(first):len(first)], WithRetry())
	var last error
	for try := 0; try < attempts; try++ {
		entry := first
		if try > 0 {
			entry = retry
		}
		pm, err := e.decide(ctx, resource, entry, nil)
		if err != nil {
			if try == 0 {
				return err
			}
			return last
		}
		err = fn(ctx)
		pm.Exit(WithError(err))
		var re *RetryableError
		if !errors.As(err, &re) {
			return err
		}
		last = re.Err
		if try+1 == attempts {
			break
		}
		d := backoff(try, base, maxDelay)
		if re.After > maxDelay {
			break
		}
		d = max(d, re.After)
		if e.cf.clk.Sleep(ctx, d) != nil {
			break
		}
	}
	return last
}

// backoff is the wait before retry try+1: base·2^try capped at maxDelay,
// less a random jitter of up to half.
func backoff(try int, base, maxDelay time.Duration) time.Duration {
	d := maxDelay
	if try < 30 && base<<try < maxDelay {
		d = base << try
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}
