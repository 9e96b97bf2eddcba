package algo

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

func sentinelSpec() Spec {
	return withDefaults(Spec{Kind: SentinelWindow, Limit: 10})
}

// TestSentinelWindowCountsWholeBuckets: the two 500ms buckets count whole,
// as Sentinel's LeapArray does, so the passes of [0, 500ms) block until
// 1s exactly and none of them is counted after.
func TestSentinelWindowCountsWholeBuckets(t *testing.T) {
	l, clk := newTestLimiter(t, sentinelSpec(), 10) // 250ms into a bucket
	clk.Advance(249 * time.Millisecond)             // 499ms
	if n, _ := drain(t, l, clk.Nanotime()); n != 10 {
		t.Fatalf("passed %d at 499ms, want 10", n)
	}
	clk.Advance(time.Millisecond) // 500ms: a new bucket, the old one still counted
	if n, d := drain(t, l, clk.Nanotime()); n != 0 || d.Wait != 500*time.Millisecond {
		t.Fatalf("at 500ms passed %d, retryAfter %v; want 0, 500ms (when [0,500ms) drops out)", n, d.Wait)
	}
	clk.Advance(499 * time.Millisecond) // 999ms
	if n, _ := drain(t, l, clk.Nanotime()); n != 0 {
		t.Fatalf("at 999ms passed %d, want 0", n)
	}
	clk.Advance(time.Millisecond) // 1000ms: [0,500ms) dropped whole
	if n, _ := drain(t, l, clk.Nanotime()); n != 10 {
		t.Fatalf("at 1000ms passed %d, want 10 (sliding_window would still weight the old bucket)", n)
	}
}

// TestSentinelWindowAlignedToUnixEpoch: the buckets start at multiples of
// 500ms of Unix time, not at the clock's origin.
func TestSentinelWindowAlignedToUnixEpoch(t *testing.T) {
	clk := clock.NewFake(algoEpoch.Add(1300 * time.Millisecond))
	r := sentinelSpec()
	l, err := New(r, 10, clk, clk.Nanotime())
	if err != nil {
		t.Fatal(err)
	}
	if n, d := drain(t, l, clk.Nanotime()); n != 10 || d.Reset != 700*time.Millisecond {
		t.Fatalf("passed %d, reset %v; want 10, 700ms (bucket [1.0s,1.5s) then [1.5s,2.0s))", n, d.Reset)
	}
	clk.Advance(700 * time.Millisecond) // 2.0s of Unix time: the first bucket is out
	if n, _ := drain(t, l, clk.Nanotime()); n != 10 {
		t.Fatalf("at 2.0s passed %d, want 10", n)
	}
}
