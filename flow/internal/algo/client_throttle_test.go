package algo

import (
	"math"
	"testing"
	"time"
)

func TestRejectProbabilityFormula(t *testing.T) {
	for _, c := range []struct{ req, acc, k, want float64 }{
		{0, 0, 2, 0}, {10, 5, 2, 0}, {10, 0, 2, 10.0 / 11}, {100, 20, 2, 60.0 / 101}, {100, 20, 1.5, 70.0 / 101},
	} {
		if got := RejectProbability(c.req, c.acc, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("RejectProbability(%v, %v, %v) = %v, want %v", c.req, c.acc, c.k, got, c.want)
		}
	}
}

// TestThrottleRefusalRate drives a throttle whose backend accepts a fixed
// share of what reaches it and checks the refusal rate against the
// formula at the counts the throttle holds.
func TestThrottleRefusalRate(t *testing.T) {
	window := 2 * time.Minute
	th := newThrottle(window, ThrottleSpec{K: 2, Seed: 42}, 0)
	now := int64(0)
	// Warm the window: 1000 requests, 100 accepted.
	for i := range 1000 {
		if d := th.TryAcquire(now, 1, 0); d.OK() && i%10 == 0 {
			th.Record(now, true)
		}
	}
	req, acc := th.Counts(now)
	if req != 1000 {
		t.Fatalf("requests = %v, want 1000 (local refusals count)", req)
	}
	// With the counts frozen (no Record), the next draws refuse at about p.
	const n = 20000
	refused := 0
	var want float64
	for range n {
		r, a := th.Counts(now)
		want += RejectProbability(r, a, 2)
		if !th.TryAcquire(now, 1, 0).OK() {
			refused++
		}
	}
	want /= n
	got := float64(refused) / n
	// Binomial standard deviation at p~0.9 over 20000 draws is ~0.002.
	if math.Abs(got-want) > 0.01 {
		t.Fatalf("refusal rate %v, want %v (formula at the live counts; %v accepts)", got, want, acc)
	}
}

func TestThrottleAdmitsWhileAccepted(t *testing.T) {
	th := newThrottle(time.Minute, ThrottleSpec{K: 2, Seed: 1}, 0)
	for i := range 10000 {
		now := int64(i) * int64(time.Millisecond)
		d := th.TryAcquire(now, 1, 0)
		if !d.OK() {
			t.Fatalf("call %d refused with every call accepted", i)
		}
		th.Record(now, true)
	}
}

func TestThrottleWindowForgets(t *testing.T) {
	window := 2 * time.Minute
	th := newThrottle(window, ThrottleSpec{K: 2, Seed: 7}, 0)
	for range 500 {
		th.TryAcquire(0, 1, 0) // the backend accepts nothing
	}
	if r := th.Remaining(0); r > 0.01 {
		t.Fatalf("remaining %v with nothing accepted, want ~0", r)
	}
	later := int64(window) + int64(window)/throttleBuckets
	if r, a := th.Counts(later); r != 0 || a != 0 {
		t.Fatalf("counts a window later = %v, %v, want 0, 0", r, a)
	}
	if !th.TryAcquire(later, 1, 0).OK() {
		t.Fatal("refused after the window forgot the refusals")
	}
}

func TestThrottleRefund(t *testing.T) {
	th := newThrottle(time.Minute, ThrottleSpec{K: 2, Seed: 3}, 0)
	th.TryAcquire(0, 1, 0)
	th.TryAcquire(0, 1, 0)
	th.Refund(0, 1)
	if r, _ := th.Counts(0); r != 1 {
		t.Fatalf("requests after a refund = %v, want 1", r)
	}
}
