package flow

import (
	"math"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/warmup"
)

// tokenBucket is a Guava token bucket from package warmup: SmoothBursty for
// token_bucket, SmoothWarmingUp for warm_up. Both share this adapter; only the
// constructors differ.
//
// Guava's semantics carry over unchanged, including the one that surprises:
// a request is granted when the bucket owes nothing, however many permits it
// asks for, and the NEXT request pays for it. So no request is ever "never"
// for a token bucket; a request larger than the burst simply pushes later
// ones back.
type tokenBucket struct {
	// window is the rule's Window in seconds: rate = limit / window.
	window float64
	// warm marks a warming-up bucket, which reports no remaining permits
	// nor a reset time (see remaining).
	warm bool
	l    warmup.Limiter // by value: no pointer hop to the state
}

// A key's token bucket is this struct with the warmup.Limiter inline; the
// rate data is shared by every key of a rule (see clone).

var _ limiter = (*tokenBucket)(nil)

// newTokenBucket builds SmoothBursty at rate limit/Window, starting FULL, as
// x/time/rate and the seed articles' scripts do (Guava starts empty). Burst
// is stated for the nominal r.Limit; Guava's maxBurstSeconds = Burst/rate
// keeps it proportional to the rate, so under an adaptive factor f the bucket
// holds f*Burst, exactly as if SetRate had scaled it later.
func newTokenBucket(r *Rule, limit float64, clk clock.Clock) (limiter, error) {
	window := r.Window.Seconds()
	burstSeconds := r.Burst / (r.Limit / window)
	rate := limit / window
	l, err := warmup.NewBursty(rate,
		warmup.WithClock(clk),
		warmup.WithMaxBurstSeconds(burstSeconds),
		warmup.WithStoredPermits(math.Inf(1)), // clamped to maxPermits: full
	)
	if err != nil {
		return nil, err
	}
	b := &tokenBucket{window: window}
	l.CloneInto(&b.l)
	return b, nil
}

// clone is a fresh bucket like b (b's rate, full or cold as a new one
// starts) sharing b's immutable rate data: the keys of a user or ip rule are
// cloned from one prototype (see compiledRule.newLimiter).
func (b *tokenBucket) clone() *tokenBucket {
	c := new(tokenBucket)
	b.cloneInto(c)
	return c
}

// cloneInto makes dst what clone would return, in place. dst must be a
// zero tokenBucket that nothing uses yet.
func (b *tokenBucket) cloneInto(dst *tokenBucket) {
	dst.window, dst.warm = b.window, b.warm
	b.l.CloneInto(&dst.l)
}

func (b *tokenBucket) tryAcquire(now int64, n int, maxWait time.Duration) decision {
	res, err := b.reserve(now, n, maxWait)
	if err == nil && res.OK {
		remaining, reset := b.quota(&res)
		return decision{ok: true, wait: res.Wait, remaining: remaining, reset: reset}
	}
	return b.refusal(&res, err)
}

// reserve is the Guava reservation tryAcquire decides from.
func (b *tokenBucket) reserve(now int64, n int, maxWait time.Duration) (warmup.Reservation, error) {
	return b.l.TryReserveAt(now, n, maxWait)
}

// quota is what a granted reservation leaves: the permits stored and the
// time to refill, as the reservation saw them (reading the bucket again
// could see another call's reservation). A warming-up bucket reports
// neither (see remaining).
func (b *tokenBucket) quota(res *warmup.Reservation) (remaining float64, reset time.Duration) {
	if b.warm {
		return 0, 0
	}
	return res.Stored, res.Refill
}

// refusal is the decision for a reservation that was not granted.
func (b *tokenBucket) refusal(res *warmup.Reservation, err error) decision {
	if err != nil { // n <= 0: never valid
		return decision{never: true}
	}
	// Refused: nothing is stored, and the debt is paid at res.Wait.
	return decision{retryAfter: res.Wait, reset: res.Wait + b.reset(0)}
}

// reset is how long the bucket needs to fill up from stored permits.
func (b *tokenBucket) reset(stored float64) time.Duration {
	if b.warm {
		return 0
	}
	missing := b.l.MaxPermits() - stored
	if missing <= 0 {
		return 0
	}
	// A bursty bucket stores one permit per stable interval.
	return time.Duration(missing * b.l.StableIntervalMicros() * 1e3)
}

func (b *tokenBucket) refund(at int64, n int) { b.l.Refund(at, n) }

// setLimit is Guava's setRate: elapsed time is credited at the old rate, the
// stored permits keep their share of maxPermits, and the burst scales with
// the rate.
func (b *tokenBucket) setLimit(_ int64, limit float64) {
	_ = b.l.SetRate(limit / b.window) // limit > 0: only invalid rates fail
}

// remaining is the stored permits of a bursty bucket: what a burst may take
// now without anyone waiting (plus Guava's one request that goes into debt).
// A warming-up bucket reports 0: its stored permits measure how cold it is,
// and each of them costs more than a fresh one, so none is spare room.
func (b *tokenBucket) remaining(now int64) float64 {
	if b.warm {
		return 0
	}
	return b.l.StoredPermitsAt(now)
}
