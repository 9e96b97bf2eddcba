package algo

import (
	"slices"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// sentinelWarmSpec: 10/s, warm-up 10s, cold factor 3. Sentinel's marks:
// warning = ⌊10·10/2⌋ = 50, max = 50 + ⌊2·10·10/4⌋ = 100, slope =
// 2/10/50 = 0.004, so the cold threshold is 1/(50·0.004 + 0.1) = 3.33/s.
func sentinelWarmSpec() Spec {
	return withDefaults(Spec{Kind: SentinelWarmUp, Limit: 10, Warmup: 10 * time.Second})
}

// perSecond drives 40 calls at the start of each of secs seconds (one
// instant, so all land in the first bucket) and returns the passes of each.
func perSecond(t *testing.T, l Limiter, clk *clock.Fake, secs int, maxWait time.Duration) []int {
	t.Helper()
	var out []int
	for range secs {
		n := 0
		for range 40 {
			if d := l.TryAcquire(clk.Nanotime(), 1, maxWait); d.OK() {
				n++
			}
		}
		out = append(out, n)
		clk.Advance(time.Second)
	}
	return out
}

// TestSentinelWarmUpCurve follows Sentinel's token arithmetic second by
// second under saturating demand: stored starts at max (100) and drops by
// the previous second's passes (the count of the two buckets before the
// current one) once per second; it never grows while the passes stay at or
// above ⌊10⌋/3 = 3.
func TestSentinelWarmUpCurve(t *testing.T) {
	clk := clock.NewFake(algoEpoch) // a whole second of Unix time
	r := sentinelWarmSpec()
	l, err := New(r, 10, clk, clk.Nanotime())
	if err != nil {
		t.Fatal(err)
	}
	// stored 100,97,94,91,88,85,81,77,73,68,63,57,50 -> thresholds 3.33,
	// 3.47,3.62,3.79,3.97,4.17,4.46,4.81,5.21,5.81,6.58,7.81, then at the
	// warning mark: 10.
	want := []int{3, 3, 3, 3, 3, 4, 4, 4, 5, 5, 6, 7, 10, 10, 10, 10}
	got := perSecond(t, l, clk, len(want), 0)
	if !slices.Equal(got, want) {
		t.Fatalf("passes per second %v, want %v", got, want)
	}
	// Idle long enough to refill to max: cold again.
	clk.Advance(time.Minute)
	if got := perSecond(t, l, clk, 1, 0); got[0] != 3 {
		t.Fatalf("after a minute idle passed %d, want 3 (cold again)", got[0])
	}
}

// TestSentinelWarmUpQueues: with maxWait the threshold spaces calls
// ⌈1/threshold⌉ apart, as Sentinel's throttling checker does.
func TestSentinelWarmUpQueues(t *testing.T) {
	clk := clock.NewFake(algoEpoch)
	r := sentinelWarmSpec()
	l, err := New(r, 10, clk, clk.Nanotime())
	if err != nil {
		t.Fatal(err)
	}
	now := clk.Nanotime()
	if d := l.TryAcquire(now, 1, time.Second); !d.OK() || d.Wait != 0 {
		t.Fatalf("first call %+v, want ok at once", d)
	}
	d := l.TryAcquire(now, 1, time.Second)
	if want := 300 * time.Millisecond; !d.OK() || d.Wait != want { // ⌈1e9/3.333…⌉ ns
		t.Fatalf("second call %+v, want ok after %v", d, want)
	}
	for range 2 {
		l.TryAcquire(now, 1, time.Second) // 600ms, 900ms
	}
	if d := l.TryAcquire(now, 1, time.Second); d.OK() {
		t.Fatalf("fifth call %+v, want refused (its slot is 1.2s away)", d)
	}
}
