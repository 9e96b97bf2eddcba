package algo

import (
	"testing"
	"time"
)

// TestBreakerWindowLateOutcome: an outcome stamped a whole window late
// (its caller was preempted) counts in the newer bucket of its slot instead
// of wiping it.
func TestBreakerWindowLateOutcome(t *testing.T) {
	var w breakerWindow
	w.init(10*time.Second, 10, 0) // 1s buckets
	now := int64(100 * time.Second)
	for range 3 {
		w.add(now, true)
	}
	w.add(now-int64(10*time.Second), false) // same slot, one window earlier
	if c, b := w.sum(now); c != 4 || b != 3 {
		t.Fatalf("window %d bad of %d, want 3 of 4", b, c)
	}
}

// TestBreakerWindowBuckets: a window of n buckets counts the outcomes of
// the buckets that began within the last n bucket lengths, and one bucket
// is a tumbling window that forgets everything at each edge.
func TestBreakerWindowBuckets(t *testing.T) {
	sec := int64(time.Second)
	for _, tc := range []struct {
		n       int
		atEdge  uint64 // outcomes counted just after the edge at 10s
		atHalf  uint64 // at 14.5s
		buckets int    // slots held
	}{
		{n: 1, atEdge: 1, atHalf: 5, buckets: 1},
		{n: 2, atEdge: 6, atHalf: 10, buckets: 2},
		{n: 10, atEdge: 10, atHalf: 10, buckets: 10},
		{n: 40, atEdge: 10, atHalf: 10, buckets: 40},
	} {
		var w breakerWindow
		w.init(10*time.Second, tc.n, 0)
		if len(w.buckets) != tc.buckets {
			t.Errorf("%d buckets: holds %d slots", tc.n, len(w.buckets))
		}
		// One outcome a second from 1s to 9s, bad from 5s on.
		for s := int64(1); s < 10; s++ {
			w.add(s*sec, s >= 5)
		}
		w.add(10*sec, false) // the first of the next tumbling window
		if c, _ := w.sum(10 * sec); c != tc.atEdge {
			t.Errorf("%d buckets: %d outcomes at 10s, want %d", tc.n, c, tc.atEdge)
		}
		for s := int64(11); s < 15; s++ {
			w.add(s*sec, true)
		}
		if c, _ := w.sum(14*sec + sec/2); c != tc.atHalf {
			t.Errorf("%d buckets: %d outcomes at 14.5s, want %d", tc.n, c, tc.atHalf)
		}
	}
}

// TestBreakerWindowUnixAligned: buckets begin at multiples of their length
// since the Unix epoch whatever the clock's origin, as Sentinel's do.
func TestBreakerWindowUnixAligned(t *testing.T) {
	var w breakerWindow
	origin := int64(1_700_000_002_500 * time.Millisecond) // 2.5s into a 5s bucket
	w.init(5*time.Second, 1, origin)
	w.add(0, true)
	w.add(int64(2499*time.Millisecond), true) // Unix ...4.999s: same bucket
	if c, _ := w.sum(int64(2499 * time.Millisecond)); c != 2 {
		t.Fatalf("%d outcomes before the Unix edge, want 2", c)
	}
	w.add(int64(2500*time.Millisecond), false) // Unix ...5s: a new bucket
	if c, b := w.sum(int64(2500 * time.Millisecond)); c != 1 || b != 0 {
		t.Fatalf("%d bad of %d after the Unix edge, want 0 of 1", b, c)
	}
}
