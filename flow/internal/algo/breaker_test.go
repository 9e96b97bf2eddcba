package algo

import (
	"testing"
	"time"
)

// TestBreakerCycle walks one breaker through its states on fixed instants:
// closed until the error ratio passes Threshold over MinRequests calls,
// open for OpenFor, half-open for its probes, closed again when they
// succeed, with a fresh window.
func TestBreakerCycle(t *testing.T) {
	s := withDefaults(Spec{Kind: CircuitBreaker, Window: 10 * time.Second,
		Breaker: BreakerSpec{Strategy: BreakerErrorRatio, Threshold: 0.5, MinRequests: 4, OpenFor: 5 * time.Second, Probes: 2}})
	l, err := New(s, 0, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := l.(*Breaker)
	now := int64(time.Hour)
	call := func(failed bool) (BreakerMove, bool) {
		t.Helper()
		v := b.Check(&s.Breaker, now)
		if !v.OK {
			t.Fatalf("closed breaker refused: %+v", v)
		}
		return b.Record(&s.Breaker, v, now, time.Millisecond, failed)
	}
	for _, failed := range []bool{false, true, true} {
		if m, moved := call(failed); moved {
			t.Fatalf("moved %+v before MinRequests", m)
		}
	}
	m, moved := call(true) // 3 bad of 4 > 0.5
	if !moved || m.From != BreakerClosed || m.To != BreakerOpen || m.Completed != 4 || m.Bad != 3 || m.Measure != 0.75 {
		t.Fatalf("4th call moved %v: %+v, want closed -> open at 3 bad of 4", moved, m)
	}
	if v := b.Check(&s.Breaker, now+int64(time.Second)); v.OK || v.RetryAfter != 4*time.Second {
		t.Fatalf("open, 1s later: %+v, want refused with retryAfter 4s", v)
	}
	now += int64(5 * time.Second)
	if got := b.State(now); got != BreakerHalfOpen {
		t.Fatalf("state after OpenFor %v, want half-open", got)
	}
	p1, p2 := b.Check(&s.Breaker, now), b.Check(&s.Breaker, now)
	if !p1.OK || !p1.Moved || !p2.OK || p2.Moved {
		t.Fatalf("probes %+v %+v, want two, the first moving the breaker", p1, p2)
	}
	if v := b.Check(&s.Breaker, now); v.OK {
		t.Fatalf("third call while 2 probes are out: %+v, want refused", v)
	}
	if _, moved := b.Record(&s.Breaker, p1, now, time.Millisecond, false); moved {
		t.Fatal("closed after one of two probes")
	}
	if m, moved := b.Record(&s.Breaker, p2, now, time.Millisecond, false); !moved || m.To != BreakerClosed {
		t.Fatalf("last probe: moved %v %+v, want closed", moved, m)
	}
	if c, bad, _ := b.Window(&s.Breaker, now); c != 0 || bad != 0 {
		t.Fatalf("window after closing: %d bad of %d, want empty", bad, c)
	}
}

// TestBreakerCancelGivesBackProbe: a probe whose call a later rule refused
// is given back, so another call may probe.
func TestBreakerCancelGivesBackProbe(t *testing.T) {
	s := withDefaults(Spec{Kind: CircuitBreaker, Window: time.Second,
		Breaker: BreakerSpec{Strategy: BreakerErrorCount, Threshold: 1, MinRequests: 1, OpenFor: time.Second}})
	l, _ := New(s, 0, nil, 0)
	b := l.(*Breaker)
	v := b.Check(&s.Breaker, 0)
	if m, moved := b.Record(&s.Breaker, v, 0, 0, true); !moved || m.To != BreakerOpen {
		t.Fatalf("one error with threshold 1: %+v, want open", m)
	}
	at := int64(time.Second)
	p := b.Check(&s.Breaker, at)
	if !p.OK {
		t.Fatalf("probe refused: %+v", p)
	}
	if v := b.Check(&s.Breaker, at); v.OK {
		t.Fatal("second probe admitted with Probes 1")
	}
	b.Cancel(p)
	if v := b.Check(&s.Breaker, at); !v.OK {
		t.Fatalf("after Cancel: %+v, want the probe back", v)
	}
}
