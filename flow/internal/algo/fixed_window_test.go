package algo

import (
	"math/rand/v2"

	"github.com/flowgate/flowgate/clock"
	"sync"
	"testing"
	"time"
)

func fixedSpec() Spec {
	return withDefaults(Spec{Kind: FixedWindow, Limit: 10})
}

func TestFixedWindowAlignedToTheSecond(t *testing.T) {
	l, clk := newTestLimiter(t, fixedSpec(), 10) // 250ms after a whole second
	now := clk.Nanotime()
	d := l.TryAcquire(now, 1, 0)
	if !d.OK() || d.Remaining != 9 || d.Reset != 750*time.Millisecond {
		t.Fatalf("first call = %+v, want remaining 9, reset 750ms (window [0s, 1s))", d)
	}
	if _, d := drain(t, l, now); d.Wait != 750*time.Millisecond {
		t.Fatalf("retryAfter %v, want 750ms: the window's end", d.Wait)
	}
}

// TestFixedWindowAlignedToTheEpochNotTheOrigin: a clock whose Nanotime
// starts mid-second (a process started at .300) still counts in whole Unix
// seconds, the windows the cluster scripts count in, so a local fallback
// never spreads one Redis second over two local windows.
func TestFixedWindowAlignedToTheEpochNotTheOrigin(t *testing.T) {
	for _, start := range []time.Duration{300 * time.Millisecond, -300 * time.Millisecond, 999 * time.Millisecond} {
		clk := clock.NewFake(algoEpoch.Add(start))
		r := fixedSpec()
		l, err := New(r, 10, clk, clk.Nanotime())
		if err != nil {
			t.Fatal(err)
		}
		toSecond := (time.Second - start%time.Second) % time.Second
		if n, d := drain(t, l, clk.Nanotime()); n != 10 || d.Wait != toSecond {
			t.Fatalf("origin %v: admitted %d, retryAfter %v; want 10 and %v (the next whole second)", start, n, d.Wait, toSecond)
		}
		clk.Advance(toSecond - 1)
		if d := l.TryAcquire(clk.Nanotime(), 1, 0); d.OK() {
			t.Fatalf("origin %v: admitted 1ns before the second", start)
		}
		clk.Advance(1)
		if n, _ := drain(t, l, clk.Nanotime()); n != 10 {
			t.Fatalf("origin %v: admitted %d at the whole second, want 10", start, n)
		}
	}
}

// TestFixedWindowAdmitsTwiceTheLimitAcrossABoundary asserts the documented
// flaw: limit at the end of one window and limit at the start of the next.
func TestFixedWindowAdmitsTwiceTheLimitAcrossABoundary(t *testing.T) {
	l, clk := newTestLimiter(t, fixedSpec(), 10)
	clk.Advance(749 * time.Millisecond) // 999ms
	first, _ := drain(t, l, clk.Nanotime())
	clk.Advance(time.Millisecond) // 1000ms: a new window
	second, _ := drain(t, l, clk.Nanotime())
	if first+second != 20 {
		t.Fatalf("admitted %d+%d within 1ms, want 20: twice the limit across the boundary", first, second)
	}
}

func TestFixedWindowMaxWaitReservesTheNextWindow(t *testing.T) {
	l, clk := newTestLimiter(t, fixedSpec(), 10)
	now := clk.Nanotime()
	drain(t, l, now)
	for i := range 10 {
		if d := l.TryAcquire(now, 1, time.Second); !d.OK() || d.Wait != 750*time.Millisecond {
			t.Fatalf("queued call %d = %+v, want wait 750ms for the next window", i, d)
		}
	}
	// The next window is booked up: the one after is the honest answer.
	if d := l.TryAcquire(now, 1, time.Second); d.OK() || d.Wait != 1750*time.Millisecond {
		t.Fatalf("11th queued call = %+v, want refused, retryAfter 1.75s", d)
	}
	// A refund at the queued moment frees a reservation.
	l.Refund(now+int64(750*time.Millisecond), 1)
	if d := l.TryAcquire(now, 1, time.Second); !d.OK() || d.Wait != 750*time.Millisecond {
		t.Fatalf("after a refund = %+v, want the freed reservation", d)
	}
	// A refund in the current window while calls are queued is ambiguous: kept.
	l.Refund(now, 1)
	if d := l.TryAcquire(now, 1, 0); d.OK() {
		t.Fatalf("ambiguous refund was applied: %+v", d)
	}
	// In the next window the reservations count.
	clk.Advance(750 * time.Millisecond)
	if got, d := drain(t, l, clk.Nanotime()); got != 0 || d.Wait != time.Second {
		t.Fatalf("next window admitted %d, retryAfter %v; want 0 and 1s (all reserved)", got, d.Wait)
	}
}

func TestFixedWindowSetLimitKeepsCount(t *testing.T) {
	l, clk := newTestLimiter(t, fixedSpec(), 10)
	now := clk.Nanotime()
	for range 6 {
		l.TryAcquire(now, 1, 0)
	}
	l.SetLimit(now, 5)
	if d := l.TryAcquire(now, 1, 0); d.OK() || testRemaining(l, now) != 0 {
		t.Fatalf("6 taken, limit lowered to 5: %+v, remaining %v; want refused, 0", d, testRemaining(l, now))
	}
	l.SetLimit(now, 20)
	if got, _ := drain(t, l, now); got != 14 {
		t.Fatalf("limit raised to 20 with 6 taken: admitted %d more, want 14", got)
	}
}

// TestFixedWindowConcurrentExact: 16 goroutines while the clock moves; every
// window admits at most the limit, and a window in which a call was
// refused at a current reading admitted exactly the limit.
func TestFixedWindowConcurrentExact(t *testing.T) {
	l, clk := newTestLimiter(t, fixedSpec(), 10)
	var mu sync.Mutex
	perWindow := map[int64]int{}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				now := clk.Nanotime()
				if d := l.TryAcquire(now, 1, 0); d.OK() {
					// The window the limiter counted it in: a reading that
					// went stale while another goroutine moved to the next
					// window is counted there, as the limiter documents.
					mu.Lock()
					perWindow[floorDiv(now+int64(d.Reset)-1, int64(time.Second))]++
					mu.Unlock()
				}
				if w == 0 {
					clk.Advance(5 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	if len(perWindow) < 2 {
		t.Fatalf("only %d windows seen", len(perWindow))
	}
	for k, n := range perWindow {
		if n != 10 {
			t.Errorf("window %d admitted %d, want exactly 10 (16 goroutines kept it saturated)", k, n)
		}
	}
}

// TestFixedWindowRandomTrafficNeverOverbooks mixes sizes, queueing into the
// next window and refunds (at the granted moment, or at the plain now as a
// careless caller might): no window ever holds more than the limit.
func TestFixedWindowRandomTrafficNeverOverbooks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	l, clk := newTestLimiter(t, fixedSpec(), 10)
	perWindow := map[int64]int{}
	for range 20000 {
		clk.Advance(time.Duration(rng.IntN(int(30 * time.Millisecond))))
		now := clk.Nanotime()
		n := 1 + rng.IntN(3)
		maxWait := time.Duration(0)
		if rng.IntN(2) == 0 {
			maxWait = time.Duration(rng.IntN(int(1500 * time.Millisecond)))
		}
		d := l.TryAcquire(now, n, maxWait)
		if !d.OK() {
			continue
		}
		at := now + int64(d.Wait)
		switch rng.IntN(6) {
		case 0:
			l.Refund(at, n)
		case 1:
			l.Refund(now, n) // ambiguous for a queued call: must be kept
			if d.Wait == 0 {
				continue // given back for real
			}
			perWindow[floorDiv(at, int64(time.Second))] += n
		default:
			perWindow[floorDiv(at, int64(time.Second))] += n
		}
	}
	full := 0
	for k, n := range perWindow {
		if n > 10 {
			t.Fatalf("window %d holds %d permits, limit 10", k, n)
		}
		if n >= 8 {
			full++
		}
	}
	if full < len(perWindow)/2 {
		t.Fatalf("only %d of %d windows nearly full: refunds are leaking permits", full, len(perWindow))
	}
}
