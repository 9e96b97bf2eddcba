package algo

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

func slidingSpec(buckets int) Spec {
	return withDefaults(Spec{Kind: SlidingWindow, Limit: 10, Buckets: buckets})
}

// TestSlidingWindowSubWindowsAlignedToTheEpoch: sub-windows start at whole
// multiples of their width in Unix time, not at the clock's origin. With
// 10 buckets of 100ms and a clock started at .250, the first sub-window is
// [.200, .300), so a call at .250 has fully left the window at 1.300.
func TestSlidingWindowSubWindowsAlignedToTheEpoch(t *testing.T) {
	clk := clock.NewFake(algoEpoch.Add(250 * time.Millisecond))
	r := slidingSpec(10)
	l, err := New(r, 10, clk, clk.Nanotime())
	if err != nil {
		t.Fatal(err)
	}
	if d := l.TryAcquire(clk.Nanotime(), 1, 0); !d.OK() || d.Reset != 1050*time.Millisecond {
		t.Fatalf("call at .250 = %+v, want admitted with reset 1.05s (its sub-window [.200, .300) leaves at 1.300)", d)
	}
}

// TestSlidingWindowEstimator checks the documented estimate on known counts.
func TestSlidingWindowEstimator(t *testing.T) {
	for _, tc := range []struct {
		buckets   int
		admitted  int           // at 1.25s, after 10 at 0.25s
		retry     time.Duration // then
		remaining float64       // at 1.25s before any call
	}{
		// One bucket, the classic two counters: 10*(1-0.25) = 7.5 counted.
		{1, 2, 50 * time.Millisecond, 2},
		// Ten buckets: the 10 sit in [200ms, 300ms), half covered at 1.25s.
		{10, 5, 10 * time.Millisecond, 5},
	} {
		l, clk := newTestLimiter(t, slidingSpec(tc.buckets), 10)
		if got, _ := drain(t, l, clk.Nanotime()); got != 10 {
			t.Fatalf("buckets %d: admitted %d at once, want 10", tc.buckets, got)
		}
		clk.Advance(time.Second)
		now := clk.Nanotime()
		if got := testRemaining(l, now); got != tc.remaining {
			t.Errorf("buckets %d: remaining %v, want %v", tc.buckets, got, tc.remaining)
		}
		got, d := drain(t, l, now)
		if got != tc.admitted || d.Wait != tc.retry {
			t.Errorf("buckets %d: admitted %d then retryAfter %v, want %d then %v",
				tc.buckets, got, d.Wait, tc.admitted, tc.retry)
		}
		// Honest: on time it passes.
		if e := l.TryAcquire(now+int64(d.Wait), 1, 0); !e.OK() {
			t.Errorf("buckets %d: refused at retryAfter: %+v", tc.buckets, e)
		}
	}
}

// TestSlidingWindowSmoothsTheBoundary: unlike fixed_window, a burst at the
// end of one window does not buy a second full burst at the next boundary.
func TestSlidingWindowSmoothsTheBoundary(t *testing.T) {
	l, clk := newTestLimiter(t, slidingSpec(10), 10)
	clk.Advance(749 * time.Millisecond) // 999ms
	first, _ := drain(t, l, clk.Nanotime())
	clk.Advance(time.Millisecond)
	if second, _ := drain(t, l, clk.Nanotime()); first != 10 || second != 0 {
		t.Fatalf("admitted %d then %d across a boundary, want 10 then 0", first, second)
	}
}

func TestSlidingWindowMaxWaitCountsAtOnce(t *testing.T) {
	l, clk := newTestLimiter(t, slidingSpec(10), 10)
	now := clk.Nanotime()
	drain(t, l, now)
	d := l.TryAcquire(now, 1, 2*time.Second)
	if !d.OK() || d.Wait <= 0 {
		t.Fatalf("queued call = %+v, want admitted with a wait", d)
	}
	// Counted at once: a second queued call must wait longer.
	if e := l.TryAcquire(now, 1, 2*time.Second); !e.OK() || e.Wait <= d.Wait {
		t.Fatalf("second queued call = %+v, want a longer wait than %v", e, d.Wait)
	}
	if e := l.TryAcquire(now, 1, d.Wait); e.OK() {
		t.Fatalf("a call that may wait only %v was admitted: %+v", d.Wait, e)
	}
}

func TestSlidingWindowHonestRetryAfterEverywhere(t *testing.T) {
	for _, b := range []int{1, 3, 10} {
		l, clk := newTestLimiter(t, slidingSpec(b), 10)
		for i := range 3000 { // a 3-permit call every 7ms: always some refusals
			now := clk.Nanotime()
			d := l.TryAcquire(now, 3, 0)
			if !d.OK() && d.Verdict != Never {
				if d.Wait <= 0 {
					t.Fatalf("buckets %d, call %d: retryAfter %v", b, i, d.Wait)
				}
				// Probe without changing state: a copy of the limiter.
				sw := l.(*slidingWindow)
				probe := &slidingWindow{width: sw.width, off: sw.off, head: sw.head, hs: sw.hs, cap: sw.cap, counts: append([]int32(nil), sw.counts...)}
				if e := probe.TryAcquire(now+int64(d.Wait)-1000, 3, 0); e.OK() {
					t.Fatalf("buckets %d, call %d: admitted 1µs before retryAfter %v", b, i, d.Wait)
				}
				if e := probe.TryAcquire(now+int64(d.Wait), 3, 0); !e.OK() {
					t.Fatalf("buckets %d, call %d: refused at retryAfter %v", b, i, d.Wait)
				}
			}
			clk.Advance(7 * time.Millisecond)
		}
	}
}
