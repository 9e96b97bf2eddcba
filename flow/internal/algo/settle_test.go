package algo

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

var settleT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// settleAlgos are the algorithms that settle, as the engine builds them:
// 10 permits a second.
var settleAlgos = []Spec{
	{Kind: TokenBucket, Limit: 10, Window: time.Second, Burst: 10},
	{Kind: WarmUp, Limit: 10, Window: time.Second, Warmup: time.Second, ColdFactor: 3},
	{Kind: LeakyBucket, Limit: 10, Window: time.Second},
	{Kind: FixedWindow, Limit: 10, Window: time.Second},
	{Kind: SlidingWindow, Limit: 10, Window: time.Second, Buckets: 10},
	{Kind: SlidingLog, Limit: 10, Window: time.Second},
}

func newSettler(t *testing.T, s Spec) (Limiter, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(settleT0)
	l, err := New(s, s.Limit, clk, clock.Nanotime(clk))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.(Settler); !ok {
		t.Fatalf("%v is not a Settler", s.Kind)
	}
	return l, clk
}

// over counts the single permits l admits over d, offered every 5ms from
// clk's now (the clock advances).
func over(l Limiter, clk *clock.Fake, d time.Duration) int {
	n := 0
	for end := clock.Nanotime(clk) + int64(d); clock.Nanotime(clk) < end; clk.Advance(5 * time.Millisecond) {
		n += admitted(l, clock.Nanotime(clk), 100)
	}
	return n
}

// admitted counts the single permits l admits at once at now, up to max.
func admitted(l Limiter, now int64, most int) int {
	n := 0
	for range most {
		if !l.TryAcquire(now, 1, 0).OK() {
			break
		}
		n++
	}
	return n
}

// TestSettleChargeIsPaidByLaterCalls: a call estimated at 1 that cost 6
// leaves room for 5 fewer later calls over the next seconds, on every
// algorithm that settles.
func TestSettleChargeIsPaidByLaterCalls(t *testing.T) {
	for _, s := range settleAlgos {
		t.Run(s.Kind.String(), func(t *testing.T) {
			plain, pclk := newSettler(t, s)
			plain.TryAcquire(clock.Nanotime(pclk), 1, 0)
			base := over(plain, pclk, 900*time.Millisecond)

			l, clk := newSettler(t, s)
			now := clock.Nanotime(clk)
			if !l.TryAcquire(now, 1, 0).OK() {
				t.Fatal("the first call was refused")
			}
			charged := l.(Settler).Settle(now, now, 5, 100)
			if charged < 1 || charged > 5 {
				t.Fatalf("Settle charged %v, want 1..5", charged)
			}
			got := over(l, clk, 900*time.Millisecond)
			if float64(got) > max(float64(base)-charged, 0) {
				t.Errorf("after a call that cost %v more: %d admitted in 900ms, want at most %v (%d without it)", charged, got, float64(base)-charged, base)
			}
		})
	}
}

// TestSettleMaxDebtBoundsACharge: however large the actual cost, a
// settlement leaves no more than maxDebt owed: a second charge takes
// nothing, and once the debt is paid, calls pass again.
func TestSettleMaxDebtBoundsACharge(t *testing.T) {
	for _, s := range settleAlgos {
		t.Run(s.Kind.String(), func(t *testing.T) {
			l, clk := newSettler(t, s)
			now := clock.Nanotime(clk)
			if !l.TryAcquire(now, 1, 0).OK() {
				t.Fatal("the first call was refused")
			}
			charged := l.(Settler).Settle(now, now, 1000, 3)
			if charged > 1000 {
				t.Fatalf("charged %v of 1000", charged)
			}
			if again := l.(Settler).Settle(now, now, 1000, 3); again != 0 {
				t.Errorf("a second charge while maxDebt is owed took %v, want 0", again)
			}
			// Within limit + maxDebt: at 10/s, the calls admitted over the
			// next 2s plus what was charged stay under 2s of rate, a
			// burst, maxDebt and the first call.
			if got := float64(over(l, clk, 2*time.Second)) + charged; got > 20+10+3+1 {
				t.Errorf("admitted + charged over 2s = %v, want <= 34", got)
			}
		})
	}
}

// TestSettleRefundGivesBackAtMostWhatWasTaken: a call estimated at 5 that
// cost 1 gives some back; a refund larger than the estimate never makes
// the limiter admit more than a fresh one.
func TestSettleRefundGivesBackAtMostWhatWasTaken(t *testing.T) {
	for _, s := range settleAlgos {
		t.Run(s.Kind.String(), func(t *testing.T) {
			fresh, fclk := newSettler(t, s)
			most := over(fresh, fclk, time.Second)

			l, clk := newSettler(t, s)
			now := clock.Nanotime(clk)
			if d := l.TryAcquire(now, 5, time.Second); !d.OK() {
				t.Fatalf("a call of 5 was refused: %+v", d)
			}
			if back := l.(Settler).Settle(now, now, -1000, 10); back > 1000 {
				t.Fatalf("gave back %v of 1000", back)
			}
			if got := over(l, clk, time.Second); got > most {
				t.Errorf("after an over-refund: %d admitted in 1s, more than a fresh limiter's %d", got, most)
			}
		})
	}
}

// TestSettleFixedWindowClosed: a call settled after its window closed
// changes nothing; one settled while it is open adjusts it.
func TestSettleFixedWindowClosed(t *testing.T) {
	s := Spec{Kind: FixedWindow, Limit: 10, Window: time.Second}
	l, clk := newSettler(t, s)
	at := clock.Nanotime(clk)
	l.TryAcquire(at, 1, 0)
	clk.Advance(time.Second)
	now := clock.Nanotime(clk)
	if got := l.(Settler).Settle(now, at, 5, 100); got != 0 {
		t.Fatalf("settled %v against a closed window, want 0", got)
	}
	if got := admitted(l, now, 100); got != 10 {
		t.Fatalf("the new window admits %d, want 10", got)
	}
}
