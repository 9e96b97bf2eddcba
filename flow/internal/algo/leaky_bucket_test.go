package algo

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func leakySpec() Spec {
	return withDefaults(Spec{Kind: LeakyBucket, Limit: 10})
}

func TestLeakyBucketSpacingExact(t *testing.T) {
	l, clk := newTestLimiter(t, leakySpec(), 10)
	var admitted []int64
	for range 2000 { // a call every millisecond for 2s
		now := clk.Nanotime()
		if d := l.TryAcquire(now, 1, 0); d.OK() {
			admitted = append(admitted, now)
		} else if d.Wait <= 0 || d.Wait > 100*time.Millisecond {
			t.Fatalf("retryAfter %v, want in (0, 100ms]", d.Wait)
		}
		clk.Advance(time.Millisecond)
	}
	if len(admitted) != 20 {
		t.Fatalf("admitted %d in 2s, want 20 at 10/s", len(admitted))
	}
	for i := 1; i < len(admitted); i++ {
		if gap := time.Duration(admitted[i] - admitted[i-1]); gap != 100*time.Millisecond {
			t.Fatalf("gap %d = %v, want exactly 100ms", i, gap)
		}
	}
}

func TestLeakyBucketNoBurstAfterIdle(t *testing.T) {
	l, clk := newTestLimiter(t, leakySpec(), 10)
	clk.Advance(time.Hour)
	if got, _ := drain(t, l, clk.Nanotime()); got != 1 {
		t.Fatalf("after an idle hour admitted %d at once, want 1: idle time is not banked", got)
	}
}

func TestLeakyBucketTokensAreSpacings(t *testing.T) {
	l, clk := newTestLimiter(t, leakySpec(), 10)
	now := clk.Nanotime()
	l.TryAcquire(now, 1, 0)
	d := l.TryAcquire(now, 3, 0)
	if d.OK() || d.Wait != 300*time.Millisecond {
		t.Fatalf("3 permits right after 1 = %+v, want refused for 3 spacings (300ms)", d)
	}
	now += int64(d.Wait)
	if d := l.TryAcquire(now, 3, 0); !d.OK() {
		t.Fatalf("3 permits at retryAfter refused: %+v", d)
	}
}

func TestLeakyBucketQueuesWithinMaxWait(t *testing.T) {
	const maxWait = 250 * time.Millisecond
	l, clk := newTestLimiter(t, leakySpec(), 10)
	now := clk.Nanotime()
	for i, want := range []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond} {
		if d := l.TryAcquire(now, 1, maxWait); !d.OK() || d.Wait != want {
			t.Fatalf("call %d = %+v, want queued for %v", i, d, want)
		}
	}
	d := l.TryAcquire(now, 1, maxWait)
	if d.OK() || d.Wait != 300*time.Millisecond {
		t.Fatalf("4th call = %+v, want refused: its slot is 300ms away", d)
	}
	// Refunding the latest slot gives it back.
	l.Refund(now+int64(200*time.Millisecond), 1)
	if d := l.TryAcquire(now, 1, maxWait); !d.OK() || d.Wait != 200*time.Millisecond {
		t.Fatalf("after refunding the latest slot = %+v, want the 200ms slot", d)
	}
	// A slot with a later one queued behind it is kept: no double booking.
	l.Refund(now+int64(100*time.Millisecond), 1)
	if d := l.TryAcquire(now, 1, time.Second); !d.OK() || d.Wait != 300*time.Millisecond {
		t.Fatalf("after refunding a middle slot = %+v, want the next free slot, 300ms", d)
	}
}

func TestLeakyBucketNeverAboveLimit(t *testing.T) {
	l, clk := newTestLimiter(t, leakySpec(), 10)
	now := clk.Nanotime()
	if d := l.TryAcquire(now, 11, 0); d.Verdict != Never {
		t.Fatalf("11 permits at limit 10 without a queue = %+v, want never", d)
	}
	// With a queue too: an idle bucket would let it go at once, free.
	if d := l.TryAcquire(now, 11, 2*time.Second); d.Verdict != Never {
		t.Fatalf("11 permits with maxWait 2s = %+v, want never", d)
	}
	// The whole limit queues its 10 spacings behind a call.
	l.TryAcquire(now, 1, 0)
	if d := l.TryAcquire(now, 10, 2*time.Second); !d.OK() || d.Wait != time.Second {
		t.Fatalf("10 permits with maxWait 2s = %+v, want queued 1s", d)
	}
}

func TestLeakyBucketSetLimitKeepsQueue(t *testing.T) {
	l, clk := newTestLimiter(t, leakySpec(), 10)
	now := clk.Nanotime()
	l.TryAcquire(now, 1, time.Second)
	l.TryAcquire(now, 1, time.Second) // slot at +100ms
	l.SetLimit(now, 5)                // 200ms spacing from now on
	if d := l.TryAcquire(now, 1, time.Second); !d.OK() || d.Wait != 300*time.Millisecond {
		t.Fatalf("after halving = %+v, want the slot 200ms after the queued one (300ms)", d)
	}
}

// TestLeakyBucketRandomTrafficKeepsSpacing mixes sizes, queueing and refunds
// (at the granted slot or at the plain now): between two calls that went
// ahead there are always the later call's spacings, never a double booking.
func TestLeakyBucketRandomTrafficKeepsSpacing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	l, clk := newTestLimiter(t, leakySpec(), 10)
	type slot struct {
		at int64
		n  int
	}
	var ran []slot
	for range 20000 {
		clk.Advance(time.Duration(rng.IntN(int(80 * time.Millisecond))))
		now := clk.Nanotime()
		n := 1 + rng.IntN(3)
		maxWait := time.Duration(rng.IntN(3)) * 200 * time.Millisecond
		d := l.TryAcquire(now, n, maxWait)
		if !d.OK() {
			continue
		}
		at := now + int64(d.Wait)
		switch rng.IntN(5) {
		case 0:
			l.Refund(at, n)
		case 1:
			l.Refund(now, n) // only honoured when the call went at once
			if d.Wait != 0 {
				ran = append(ran, slot{at, n}) // kept: counts as taken
			}
		default:
			ran = append(ran, slot{at, n})
		}
	}
	slices.SortFunc(ran, func(a, b slot) int { return cmp.Compare(a.at, b.at) })
	for i := 1; i < len(ran); i++ {
		if gap := ran[i].at - ran[i-1].at; gap < int64(ran[i].n)*int64(100*time.Millisecond) {
			t.Fatalf("calls at %v and %v (%d permits) only %v apart",
				time.Duration(ran[i-1].at), time.Duration(ran[i].at), ran[i].n, time.Duration(gap))
		}
	}
	busy := 0
	for _, r := range ran {
		busy += r.n
	}
	span := ran[len(ran)-1].at - ran[0].at
	if used := float64(busy) * float64(100*time.Millisecond) / float64(span); used < 0.8 {
		t.Fatalf("the calls that ran used %.2f of the rate: refunds are leaking slots", used)
	} else {
		t.Logf("%d calls ran, using %.2f of the rate", len(ran), used)
	}
}
