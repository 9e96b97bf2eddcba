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
	w.init(10 * time.Second) // 1s buckets
	now := int64(100 * time.Second)
	for range 3 {
		w.add(now, true)
	}
	w.add(now-int64(10*time.Second), false) // same slot, one window earlier
	if c, b := w.sum(now); c != 4 || b != 3 {
		t.Fatalf("window %d bad of %d, want 3 of 4", b, c)
	}
}
