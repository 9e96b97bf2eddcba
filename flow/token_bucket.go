package flow

import (
	"math"
	"sync/atomic"
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
	l *warmup.Limiter
	// window is the rule's Window in seconds: rate = limit / window.
	window float64
	// coolNs is how long an idle bursty bucket takes to store one permit,
	// kept beside the limiter with maxP (both change only in setLimit) so a
	// decision can say when the bucket is full again without another lock.
	// -1 marks a warming-up bucket, which reports neither (see remaining).
	coolNs atomic.Int64
	maxP   atomic.Uint64 // float64 bits of the limiter's MaxPermits
}

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
	b := &tokenBucket{l: l, window: window}
	b.sync()
	return b, nil
}

// sync refreshes the cached maxPermits and stable interval after a
// construction or a rate change.
func (b *tokenBucket) sync() {
	b.maxP.Store(math.Float64bits(b.l.MaxPermits()))
	if !b.warm() {
		b.coolNs.Store(int64(1e9 / b.l.Rate()))
	}
}

func (b *tokenBucket) warm() bool { return b.coolNs.Load() < 0 }

func (b *tokenBucket) tryAcquire(now int64, n int, maxWait time.Duration) decision {
	res, err := b.l.TryReserveAt(now, n, maxWait)
	if err != nil { // n <= 0: never valid
		return decision{never: true}
	}
	if !res.OK {
		// Refused: nothing is stored, and the debt is paid at res.Wait.
		return decision{retryAfter: res.Wait, reset: res.Wait + b.reset(0)}
	}
	left := 0.0 // a warming-up bucket: see remaining
	if !b.warm() {
		left = res.Stored
	}
	return decision{ok: true, wait: res.Wait, remaining: left, reset: b.reset(left)}
}

// reset is how long the bucket needs to fill up from stored permits.
func (b *tokenBucket) reset(stored float64) time.Duration {
	missing := math.Float64frombits(b.maxP.Load()) - stored
	if missing <= 0 || b.warm() {
		return 0
	}
	return time.Duration(missing * float64(b.coolNs.Load()))
}

func (b *tokenBucket) refund(at int64, n int) { b.l.Refund(at, n) }

func (b *tokenBucket) release(int) {}

// setLimit is Guava's setRate: elapsed time is credited at the old rate, the
// stored permits keep their share of maxPermits, and the burst scales with
// the rate.
func (b *tokenBucket) setLimit(_ int64, limit float64) {
	if err := b.l.SetRate(limit / b.window); err == nil {
		b.sync()
	}
}

// remaining is the stored permits of a bursty bucket: what a burst may take
// now without anyone waiting (plus Guava's one request that goes into debt).
// A warming-up bucket reports 0: its stored permits measure how cold it is,
// and each of them costs more than a fresh one, so none is spare room.
func (b *tokenBucket) remaining(now int64) float64 {
	if b.warm() {
		return 0
	}
	return b.l.StoredPermitsAt(now)
}
