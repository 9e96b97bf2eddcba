package algo

import (
	"testing"
	"time"
)

func concSpec() Spec {
	return withDefaults(Spec{Kind: Concurrency, Limit: 3})
}

func TestConcurrencyCapsAndReleases(t *testing.T) {
	l, clk := newTestLimiter(t, concSpec(), 3)
	now := clk.Nanotime()
	for i := range 3 {
		if d := l.TryAcquire(now, 1, 0); !d.OK() || d.Remaining != float64(2-i) {
			t.Fatalf("call %d = %+v, want ok with remaining %d", i, d, 2-i)
		}
	}
	// maxWait is ignored: in-flight calls end when they end.
	if d := l.TryAcquire(now, 1, time.Hour); d.Verdict != Refused || d.Wait != 0 {
		t.Fatalf("4th call = %+v, want refused, retryAfter 0 (unknown)", d)
	}
	testRelease(l, 1)
	if d := l.TryAcquire(now, 1, 0); !d.OK() {
		t.Fatalf("after a release = %+v, want ok", d)
	}
	testRelease(l, 3)
	if got := testRemaining(l, now); got != 3 {
		t.Fatalf("remaining after releasing all = %v, want 3", got)
	}
	if d := l.TryAcquire(now, 4, 0); d.Verdict != Never {
		t.Fatalf("4 permits at cap 3 = %+v, want never", d)
	}
	if d := l.TryAcquire(now, 3, 0); !d.OK() {
		t.Fatalf("3 permits at cap 3 = %+v, want ok", d)
	}
}

func TestConcurrencySetLimit(t *testing.T) {
	l, clk := newTestLimiter(t, concSpec(), 3)
	now := clk.Nanotime()
	drain(t, l, now)
	l.SetLimit(now, 1) // three in flight stay; nobody new until below 1
	testRelease(l, 2)
	if d := l.TryAcquire(now, 1, 0); d.OK() {
		t.Fatalf("one in flight at cap 1: %+v, want refused", d)
	}
	l.SetLimit(now, 5)
	if got, _ := drain(t, l, now); got != 4 {
		t.Fatalf("cap raised to 5 with 1 in flight: admitted %d, want 4", got)
	}
	// An adaptive factor below 1/limit still leaves one permit.
	testRelease(l, 5)
	l.SetLimit(now, 0.4)
	if got, _ := drain(t, l, now); got != 1 {
		t.Fatalf("limit 0.4: admitted %d, want 1 (capacity is at least 1)", got)
	}
}

func TestConcurrencyOverReleaseDoesNotOpenRoom(t *testing.T) {
	l, clk := newTestLimiter(t, concSpec(), 3)
	now := clk.Nanotime()
	l.TryAcquire(now, 1, 0)
	testRelease(l, 1)
	testRelease(l, 1) // twice: ignored below zero
	if got, _ := drain(t, l, now); got != 3 {
		t.Fatalf("after releasing one permit twice, admitted %d, want the cap, 3", got)
	}
}
