package algo

import (
	"testing"
	"time"
)

func bucketSpec(limit, burst float64) Spec {
	return withDefaults(Spec{Kind: TokenBucket, Limit: limit, Burst: burst})
}

func TestTokenBucketStartsFull(t *testing.T) {
	l, clk := newTestLimiter(t, bucketSpec(20, 40), 20)
	now := clk.Nanotime()
	if got := testRemaining(l, now); got != 40 {
		t.Fatalf("remaining on a fresh bucket = %v, want 40 (full)", got)
	}
	// 40 stored permits, then Guava's one request that goes into debt.
	if got, d := drain(t, l, now); got != 41 || d.Wait != 50*time.Millisecond {
		t.Fatalf("admitted %d then retryAfter %v, want 41 then 50ms (one interval at 20/s)", got, d.Wait)
	}
}

func TestTokenBucketGuavaRefill(t *testing.T) {
	l, clk := newTestLimiter(t, bucketSpec(20, 40), 20)
	drain(t, l, clk.Nanotime())
	// The debt (50ms) is paid first, then a permit is stored every 50ms.
	clk.Advance(300 * time.Millisecond)
	now := clk.Nanotime()
	if got := testRemaining(l, now); got != 5 {
		t.Fatalf("remaining 300ms after draining = %v, want 5", got)
	}
	if got, _ := drain(t, l, now); got != 6 {
		t.Fatalf("admitted %d, want 6 (5 stored + 1 into debt)", got)
	}
	// Refilling never stores more than the burst.
	clk.Advance(time.Hour)
	if got := testRemaining(l, clk.Nanotime()); got != 40 {
		t.Fatalf("remaining after an hour = %v, want 40", got)
	}
}

func TestTokenBucketSetLimitScalesBurst(t *testing.T) {
	l, clk := newTestLimiter(t, bucketSpec(20, 40), 20)
	now := clk.Nanotime()
	l.SetLimit(now, 10) // Guava: stored keeps its share of maxPermits
	if got := testRemaining(l, now); got != 20 {
		t.Fatalf("remaining after halving the rate = %v, want 20", got)
	}
	if got, d := drain(t, l, now); got != 21 || d.Wait != 100*time.Millisecond {
		t.Fatalf("admitted %d then retryAfter %v, want 21 then 100ms", got, d.Wait)
	}
	// Built directly at an adaptive factor of 0.5: the same bucket.
	r := bucketSpec(20, 40)
	l2, clk2 := newTestLimiter(t, r, 10)
	if got := testRemaining(l2, clk2.Nanotime()); got != 20 {
		t.Fatalf("built at limit 10 for Limit 20 Burst 40: remaining %v, want 20", got)
	}
}

func TestTokenBucketMaxWaitQueuesAndRefunds(t *testing.T) {
	l, clk := newTestLimiter(t, bucketSpec(10, 10), 10)
	now := clk.Nanotime()
	drain(t, l, now) // 11 admitted: 100ms owed
	d1 := l.TryAcquire(now, 1, 250*time.Millisecond)
	d2 := l.TryAcquire(now, 1, 250*time.Millisecond)
	d3 := l.TryAcquire(now, 1, 250*time.Millisecond)
	if !d1.OK() || d1.Wait != 100*time.Millisecond || !d2.OK() || d2.Wait != 200*time.Millisecond {
		t.Fatalf("queued calls = %+v, %+v; want waits 100ms and 200ms", d1, d2)
	}
	if d3.OK() || d3.Wait != 300*time.Millisecond {
		t.Fatalf("third queued call = %+v, want refused with retryAfter 300ms", d3)
	}
	// Refunding the last queued call at its moment gives its slot back.
	l.Refund(now+int64(d2.Wait), 1)
	if d := l.TryAcquire(now, 1, 250*time.Millisecond); !d.OK() || d.Wait != 200*time.Millisecond {
		t.Fatalf("after the refund = %+v, want the 200ms slot again", d)
	}
}

func TestTokenBucketReset(t *testing.T) {
	l, clk := newTestLimiter(t, bucketSpec(10, 10), 10)
	now := clk.Nanotime()
	d := l.TryAcquire(now, 4, 0)
	if !d.OK() || d.Remaining != 6 || d.Reset != 400*time.Millisecond {
		t.Fatalf("TryAcquire(4) = %+v, want ok, remaining 6, reset 400ms", d)
	}
	drain(t, l, now)
	if d := l.TryAcquire(now, 1, 0); d.OK() || d.Reset != 100*time.Millisecond+time.Second {
		t.Fatalf("refused = %+v, want reset 1.1s (100ms debt, then 10 permits at 100ms)", d)
	}
}

// TestTokenBucketStaleNow: Entry reads the clock before it reaches the
// bucket, so under concurrency a call can bring a now older than one already
// committed. With permits stored the bucket owes nothing and serves it at
// once; it sees the permits stored up to its own now (1ms at 20/s: 0.02
// fewer) and takes from the same store.
func TestTokenBucketStaleNow(t *testing.T) {
	l, clk := newTestLimiter(t, bucketSpec(20, 40), 20)
	clk.Advance(time.Second)
	now := clk.Nanotime()
	if d := l.TryAcquire(now, 1, 0); !d.OK() || d.Remaining != 39 {
		t.Fatalf("first = %+v, want ok with 39 remaining", d)
	}
	if d := l.TryAcquire(now-int64(time.Millisecond), 1, 0); !d.OK() || d.Wait != 0 || d.Remaining < 37.98-1e-9 || d.Remaining > 37.98+1e-9 {
		t.Fatalf("1ms stale = %+v, want ok at once with 37.98 remaining", d)
	}
	if got := testRemaining(l, now); got != 38 {
		t.Fatalf("remaining = %v, want 38", got)
	}
}
