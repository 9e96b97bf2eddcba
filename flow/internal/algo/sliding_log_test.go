package algo

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func logSpec(limit float64) Spec {
	return withDefaults(Spec{Kind: SlidingLog, Limit: limit})
}

// checkExact fails when more than limit stamps fall in any span [s, s+window)
// that starts at an admitted stamp; that covers every span, since the
// fullest span can always be slid right until it starts at a stamp.
func checkExact(t *testing.T, stamps []int64, limit int, window time.Duration) {
	t.Helper()
	slices.Sort(stamps)
	j := 0
	for i := range stamps {
		for j < len(stamps) && stamps[j] < stamps[i]+int64(window) {
			j++
		}
		if j-i > limit {
			t.Fatalf("%d permits in [%v, %v+%v), limit %d", j-i, time.Duration(stamps[i]), time.Duration(stamps[i]), window, limit)
		}
	}
}

func TestSlidingLogExactAcrossTheBoundary(t *testing.T) {
	l, clk := newTestLimiter(t, logSpec(10), 10)
	clk.Advance(749 * time.Millisecond) // 999ms
	var stamps []int64
	now := clk.Nanotime()
	got, d := drain(t, l, now)
	for range got {
		stamps = append(stamps, now)
	}
	if got != 10 || d.Wait != time.Second {
		t.Fatalf("admitted %d then retryAfter %v, want 10 then 1s", got, d.Wait)
	}
	for range 3000 { // every millisecond for 3s
		clk.Advance(time.Millisecond)
		now := clk.Nanotime()
		if l.TryAcquire(now, 1, 0).OK() {
			stamps = append(stamps, now)
		}
	}
	checkExact(t, stamps, 10, time.Second)
	// One call per millisecond: 10 at 1999..2008ms when the burst leaves,
	// 10 at 2999..3008ms when those leave, and the first of the next at 3999ms.
	if len(stamps) != 31 {
		t.Fatalf("admitted %d in 3s after the burst, want 21", len(stamps)-10)
	}
}

// TestSlidingLogExactUnderRandomTraffic mixes call sizes, queueing and
// refunds, and checks every admitted permit against every other.
func TestSlidingLogExactUnderRandomTraffic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l, clk := newTestLimiter(t, logSpec(7), 7)
	type grant struct {
		at int64
		n  int
	}
	var kept []grant
	for range 20000 {
		clk.Advance(time.Duration(rng.IntN(int(150 * time.Millisecond))))
		now := clk.Nanotime()
		n := 1 + rng.IntN(3)
		maxWait := time.Duration(0)
		if rng.IntN(3) == 0 {
			maxWait = time.Duration(rng.IntN(int(400 * time.Millisecond)))
		}
		d := l.TryAcquire(now, n, maxWait)
		if !d.OK() {
			if d.Verdict != Never && d.Wait <= 0 {
				t.Fatalf("refused with retryAfter %v", d.Wait)
			}
			continue
		}
		if d.Wait > maxWait {
			t.Fatalf("wait %v beyond maxWait %v", d.Wait, maxWait)
		}
		at := now + int64(d.Wait)
		if rng.IntN(5) == 0 { // a later level refused: give it back
			l.Refund(at, n)
			continue
		}
		kept = append(kept, grant{at, n})
	}
	var stamps []int64
	for _, g := range kept {
		for range g.n {
			stamps = append(stamps, g.at)
		}
	}
	checkExact(t, stamps, 7, time.Second)
	if len(stamps) < 7*2000/3 {
		t.Fatalf("only %d permits admitted over ~1500 windows: the log is refusing too much", len(stamps))
	}
}

// TestSlidingLogRefundOfQueuedCall: a queued call pushed out entries that
// still count now; refunding it must not forget them.
func TestSlidingLogRefundOfQueuedCall(t *testing.T) {
	r := logSpec(2)
	r.Window = 10 * time.Second
	l, clk := newTestLimiter(t, r, 2)
	base := clk.Nanotime()
	l.TryAcquire(base, 1, 0)                    // 0s
	l.TryAcquire(base+int64(time.Second), 1, 0) // 1s
	now := base + int64(2*time.Second)
	d := l.TryAcquire(now, 1, 10*time.Second)
	if !d.OK() || d.Wait != 8*time.Second {
		t.Fatalf("queued call = %+v, want a wait of 8s (until the 0s entry leaves)", d)
	}
	l.Refund(now+int64(d.Wait), 1)
	if e := l.TryAcquire(now, 1, 0); e.OK() {
		t.Fatalf("after the refund a call at 2s was admitted with entries at 0s and 1s still in the window")
	}
	if e := l.TryAcquire(base+int64(10*time.Second), 1, 0); !e.OK() {
		t.Fatalf("at 10s the 0s entry has left: %+v, want ok", e)
	}
}

func TestSlidingLogRetryAfterIsTheOldestRelevantEntry(t *testing.T) {
	l, clk := newTestLimiter(t, logSpec(3), 3)
	base := clk.Nanotime()
	for i := range 3 {
		l.TryAcquire(base+int64(i)*int64(100*time.Millisecond), 1, 0)
	}
	now := base + int64(500*time.Millisecond)
	if d := l.TryAcquire(now, 1, 0); d.OK() || d.Wait != 500*time.Millisecond || d.Reset != 700*time.Millisecond {
		t.Fatalf("1 permit = %+v, want retryAfter 500ms (first entry leaves), reset 700ms", d)
	}
	if d := l.TryAcquire(now, 2, 0); d.OK() || d.Wait != 600*time.Millisecond {
		t.Fatalf("2 permits = %+v, want retryAfter 600ms (second entry leaves)", d)
	}
	if got := testRemaining(l, now); got != 0 {
		t.Fatalf("remaining %v, want 0", got)
	}
}

func TestSlidingLogMemoryBoundedAndSetLimit(t *testing.T) {
	l, clk := newTestLimiter(t, logSpec(5), 5)
	sl := l.(*slidingLog)
	for range 10000 {
		l.TryAcquire(clk.Nanotime(), 1, 0)
		clk.Advance(time.Millisecond)
	}
	if len(sl.buf) != 5 || sl.size > 5 {
		t.Fatalf("ring len %d holding %d after 10000 calls, want 5", len(sl.buf), sl.size)
	}
	now := clk.Nanotime()
	before := testRemaining(l, now)
	l.SetLimit(now, 8) // grows the ring, keeps the entries in order
	if len(sl.buf) != 8 || testRemaining(l, now) != before+3 {
		t.Fatalf("after raising to 8: ring %d, remaining %v; want 8 and %v", len(sl.buf), testRemaining(l, now), before+3)
	}
	l.SetLimit(now, 2) // shrinks the capacity, not the ring
	if len(sl.buf) != 8 {
		t.Fatalf("lowering the limit reallocated the ring")
	}
}

func TestSlidingLogConcurrentExact(t *testing.T) {
	l, clk := newTestLimiter(t, logSpec(10), 10)
	var mu sync.Mutex
	var stamps []int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				now := clk.Nanotime()
				if d := l.TryAcquire(now, 1, 0); d.OK() {
					mu.Lock()
					stamps = append(stamps, now)
					mu.Unlock()
				}
				if w == 0 {
					clk.Advance(5 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	checkExact(t, stamps, 10, time.Second)
	// Goroutine 0 alone keeps it saturated: 10 per second over 2.5s.
	if span := time.Duration(clk.Nanotime()) - 250*time.Millisecond; len(stamps) < int(span/time.Second)*10 {
		t.Fatalf("admitted %d over %v, want at least %d", len(stamps), span, int(span/time.Second)*10)
	}
}
