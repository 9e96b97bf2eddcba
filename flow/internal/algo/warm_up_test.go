package algo

import (
	"testing"
	"time"
)

// TestWarmUpGuavaColdStart replays Guava's RateLimiterTest.testWarmUp: 2/s,
// 4s warm-up, cold factor 3. Each call is Guava's acquire(): it waits what
// the decision says, on the fake clock.
func TestWarmUpGuavaColdStart(t *testing.T) {
	r := withDefaults(Spec{Kind: WarmUp, Limit: 2, Warmup: 4 * time.Second})
	l, clk := newTestLimiter(t, r, 2)
	ms := time.Millisecond
	acquire8 := func(want []time.Duration) {
		t.Helper()
		for i, w := range want {
			d := l.TryAcquire(clk.Nanotime(), 1, time.Hour)
			if !d.OK() || d.Wait != w {
				t.Fatalf("acquire %d = %+v, want wait %v", i, d, w)
			}
			clk.Advance(d.Wait)
		}
	}
	cold := []time.Duration{0, 1375 * ms, 1125 * ms, 875 * ms, 625 * ms, 500 * ms, 500 * ms, 500 * ms}
	acquire8(cold)
	clk.Advance(500 * ms)  // repay the last acquire
	clk.Advance(4000 * ms) // cold again
	acquire8(cold)
	clk.Advance(500 * ms)
	clk.Advance(2000 * ms) // not cold yet: half-way
	acquire8([]time.Duration{0, 500 * ms, 500 * ms, 500 * ms, 500 * ms, 500 * ms, 500 * ms, 500 * ms})
}

func TestWarmUpRefusesWhileCold(t *testing.T) {
	r := withDefaults(Spec{Kind: WarmUp, Limit: 2, Warmup: 4 * time.Second})
	l, clk := newTestLimiter(t, r, 2)
	now := clk.Nanotime()
	if d := l.TryAcquire(now, 1, 0); !d.OK() {
		t.Fatalf("first call refused: %+v", d)
	}
	if d := l.TryAcquire(now, 1, 0); d.OK() || d.Wait != 1375*time.Millisecond {
		t.Fatalf("second call = %+v, want refused for the cold interval 1.375s", d)
	}
	if got := testRemaining(l, now); got != 0 {
		t.Fatalf("remaining = %v, want 0: stored permits of a warming-up bucket are not room", got)
	}
}
