package algo

import (
	"math"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/tokenbucket"
)

// Bucket is a Guava token bucket from package tokenbucket: SmoothBursty for
// TokenBucket, SmoothWarmingUp for WarmUp. Both share this adapter; only the
// constructors differ. It is exported for what the engine does with it:
// clone a rule's prototype per key (Clone), and drain it before a cluster
// rule's local fallback resumes (Drain).
//
// Guava's semantics carry over, including the one that surprises: a request
// is granted when the bucket owes nothing and the NEXT request pays for it.
// One departure: a request for more than the bucket can ever grant at once
// (see most) is refused as never before it is reserved. Guava would grant it
// and push every later request back by its whole cost: 2^31-1 permits at 5
// a second closed the bucket for 13.6 years.
type Bucket struct {
	// window is the rule's Window in seconds: rate = limit / window.
	window float64
	// warm marks a warming-up bucket, which reports no remaining permits
	// nor a reset time (see Remaining).
	warm bool
	l    tokenbucket.Limiter // by value: no pointer hop to the state
}

// A key's token bucket is this struct with the tokenbucket.Limiter inline; the
// rate data is shared by every key of a rule (see Clone).

var _ Limiter = (*Bucket)(nil)

// newTokenBucket builds SmoothBursty at rate limit/Window, starting FULL, as
// x/time/rate and the seed articles' scripts do (Guava starts empty). Burst
// is stated for the nominal s.Limit; Guava's maxBurstSeconds = Burst/rate
// keeps it proportional to the rate, so under an adaptive factor f the bucket
// holds f*Burst, exactly as if SetRate had scaled it later.
func newTokenBucket(s *Spec, limit float64, clk clock.Clock) (Limiter, error) {
	window := s.Window.Seconds()
	burstSeconds := s.Burst / (s.Limit / window)
	rate := limit / window
	l, err := tokenbucket.NewBursty(rate,
		tokenbucket.WithClock(clk),
		tokenbucket.WithMaxBurstSeconds(burstSeconds),
		tokenbucket.WithStoredPermits(math.Inf(1)), // clamped to maxPermits: full
	)
	if err != nil {
		return nil, err
	}
	b := &Bucket{window: window}
	l.CloneInto(&b.l)
	return b, nil
}

// Clone is a fresh bucket like b (b's rate, full or cold as a new one
// starts) sharing b's immutable rate data: the keys of a keyed rule are
// cloned from one prototype, which itself never admits a call (its rate
// must not change).
func (b *Bucket) Clone() *Bucket {
	c := new(Bucket)
	b.CloneInto(c)
	return c
}

// CloneInto makes c what Clone would return, in place, so that a caller
// can hold the bucket inside an object of its own (one allocation, and
// one pointer hop, less per key). c must be a zero Bucket nothing uses.
func (b *Bucket) CloneInto(c *Bucket) {
	c.window, c.warm = b.window, b.warm
	b.l.CloneInto(&c.l)
}

// Drain takes every permit a bursty bucket has stored at now. A warming-up
// bucket keeps them: its stored permits are its cold state, not a burst,
// and taking them would slow the next callers instead.
func (b *Bucket) Drain(now int64) {
	if b.warm {
		return
	}
	if k := int(b.l.StoredPermitsAt(now)); k > 0 {
		b.TryAcquire(now, k, 0)
	}
}

func (b *Bucket) TryAcquire(now int64, n int, maxWait time.Duration) Decision {
	// A call of one permit never exceeds most (>= 1): only larger ones pay
	// for the check.
	if n > 1 && int64(n) > b.most() {
		return Decision{Verdict: Never}
	}
	res, err := b.l.TryReserveAt(now, n, maxWait)
	switch {
	case err != nil: // n <= 0: never valid
		return Decision{Verdict: Never}
	case !res.OK:
		// Refused: nothing is stored, and the debt is paid at res.Wait.
		return Decision{Verdict: Refused, Wait: res.Wait, Reset: res.Wait + b.reset(0)}
	case b.warm: // no remaining permits nor reset time (see Remaining)
		return Decision{Verdict: Granted, Wait: res.Wait}
	}
	// What the reservation left, as it saw it: reading the bucket again
	// could see another call's reservation.
	return Decision{Verdict: Granted, Wait: res.Wait, Remaining: res.Stored, Reset: res.Refill}
}

// most is the largest request the bucket grants, from its rate now (so an
// adaptive factor scales it with the limit): a bursty bucket's effective
// limit per Window or its burst, whichever is larger; a warming-up bucket's
// limit per Window (its stored permits measure how cold it is, not room).
func (b *Bucket) most() int64 {
	limit := b.l.Rate() * b.window
	if !b.warm {
		limit = max(limit, b.l.MaxPermits())
	}
	return capacity(limit)
}

// reset is how long the bucket needs to fill up from stored permits.
func (b *Bucket) reset(stored float64) time.Duration {
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

func (b *Bucket) Refund(at int64, n int) { b.l.Refund(at, n) }

// SetLimit is Guava's setRate: elapsed time is credited at the old rate, the
// stored permits keep their share of maxPermits, and the burst scales with
// the rate.
func (b *Bucket) SetLimit(_ int64, limit float64) {
	_ = b.l.SetRate(limit / b.window) // limit > 0: only invalid rates fail
}

// Rate is the bucket's rate now, in permits per second: the effective
// limit per Window.
func (b *Bucket) Rate() float64 { return b.l.Rate() }

// Remaining is the stored permits of a bursty bucket: what a burst may take
// now without anyone waiting (plus Guava's one request that goes into debt).
// A warming-up bucket reports 0: its stored permits measure how cold it is,
// and each of them costs more than a fresh one, so none is spare room.
func (b *Bucket) Remaining(now int64) float64 {
	if b.warm {
		return 0
	}
	return b.l.StoredPermitsAt(now)
}
