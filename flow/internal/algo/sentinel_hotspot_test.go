package algo

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

func newHotspot(t *testing.T, r Spec) (Limiter, *clock.Fake) {
	t.Helper()
	r.Kind = SentinelHotspot
	r = withDefaults(r)
	clk := clock.NewFake(algoEpoch)
	l, err := New(r, r.Limit, clk, clk.Nanotime())
	if err != nil {
		t.Fatal(err)
	}
	return l, clk
}

// TestSentinelHotspotRefillsInLumps: limit+burst at first, nothing back
// until more than a whole window has passed since the last refill, then
// ⌊elapsed·limit/window⌋ at once (token_bucket would have refilled 1 per
// 100ms all along).
func TestSentinelHotspotRefillsInLumps(t *testing.T) {
	l, clk := newHotspot(t, Spec{Limit: 10, Burst: 5})
	if n, _ := drain(t, l, clk.Nanotime()); n != 15 {
		t.Fatalf("passed %d at first, want 15 (limit 10 + burst 5)", n)
	}
	clk.Advance(time.Second) // exactly one window: Sentinel wants more
	if n, d := drain(t, l, clk.Nanotime()); n != 0 || d.Wait != time.Millisecond {
		t.Fatalf("at 1s passed %d (retryAfter %v), want 0 (1ms)", n, d.Wait)
	}
	clk.Advance(500 * time.Millisecond) // 1.5s since the refill: ⌊1500·10/1000⌋ = 15
	if n, _ := drain(t, l, clk.Nanotime()); n != 15 {
		t.Fatalf("at 1.5s passed %d, want 15", n)
	}
}

// TestSentinelHotspotQueueIsStrict: slots ⌊window/limit⌋ ms apart; a call
// whose wait equals maxWait is refused, as Sentinel compares strictly, and
// maxWait 1ns admits only a call whose slot has come.
func TestSentinelHotspotQueueIsStrict(t *testing.T) {
	l, clk := newHotspot(t, Spec{Limit: 3})
	now := clk.Nanotime()
	if d := l.TryAcquire(now, 1, 666*time.Millisecond); !d.OK() || d.Wait != 0 {
		t.Fatalf("first %+v, want ok", d)
	}
	if d := l.TryAcquire(now, 1, 666*time.Millisecond); !d.OK() || d.Wait != 333*time.Millisecond {
		t.Fatalf("second %+v, want a wait of 333ms (⌊1000/3⌋)", d)
	}
	if d := l.TryAcquire(now, 1, 666*time.Millisecond); d.OK() {
		t.Fatalf("third %+v, want refused: its wait 666ms is not under maxWait 666ms", d)
	}
	p, clk2 := newHotspot(t, Spec{Limit: 10})
	now = clk2.Nanotime()
	p.TryAcquire(now, 1, time.Nanosecond)
	if d := p.TryAcquire(now+int64(99*time.Millisecond), 1, time.Nanosecond); d.OK() {
		t.Fatalf("1ms early with maxWait 1ns: %+v, want refused", d)
	}
	if d := p.TryAcquire(now+int64(100*time.Millisecond), 1, time.Nanosecond); !d.OK() || d.Wait != 0 {
		t.Fatalf("on its slot with maxWait 1ns: %+v, want ok at once", d)
	}
}
