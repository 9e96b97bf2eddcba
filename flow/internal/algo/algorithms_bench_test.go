package algo

import (
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// benchLimiter builds one algorithm at limit per second on clk.
func benchLimiter(b testing.TB, a Kind, limit float64, clk clock.Clock) Limiter {
	r := testSpec(a)
	r.Limit = limit
	if a == TokenBucket {
		r.Burst = limit
	}
	l, err := New(r, limit, clk, clock.Nanotime(clk))
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkAlgorithms/<algo>/fixed-now: TryAcquire at one instant, so after
// the first calls every call is a refusal (the blocked path).
// /real-clock: the clock read per call and a limit high enough that calls
// pass (the pass path); concurrency releases each permit.
// /real-clock-parallel: the same from GOMAXPROCS goroutines on one limiter.
func BenchmarkAlgorithms(b *testing.B) {
	for _, c := range algoCases() {
		b.Run(c.algo.String()+"/fixed-now", func(b *testing.B) {
			clk := clock.NewFake(algoEpoch)
			l := benchLimiter(b, c.algo, 10, clk)
			now := clk.Nanotime()
			b.ReportAllocs()
			for b.Loop() {
				l.TryAcquire(now, 1, 0)
			}
		})
		b.Run(c.algo.String()+"/real-clock", func(b *testing.B) {
			clk := clock.Real()
			l := benchLimiter(b, c.algo, benchHighLimit(c.algo), clk)
			conc := c.algo == Concurrency
			b.ReportAllocs()
			for b.Loop() {
				if d := l.TryAcquire(clock.Nanotime(clk), 1, 0); d.OK() && conc {
					testRelease(l, 1)
				}
			}
		})
		b.Run(c.algo.String()+"/real-clock-parallel", func(b *testing.B) {
			clk := clock.Real()
			l := benchLimiter(b, c.algo, benchHighLimit(c.algo), clk)
			conc := c.algo == Concurrency
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if d := l.TryAcquire(clock.Nanotime(clk), 1, 0); d.OK() && conc {
						testRelease(l, 1)
					}
				}
			})
		})
	}
}

// TestLimiterMemory measures the heap each limiter holds (its struct plus
// what it owns) at limit 10 per second, the per-key cost at the user and ip
// levels, and holds it to the 200-byte budget per key. Token buckets are
// measured as keys get them, cloned from the rule's prototype.
func TestLimiterMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 10000 limiters per algorithm")
	}
	clk := clock.NewFake(algoEpoch)
	const n = 10000
	for _, c := range algoCases() {
		keep := make([]Limiter, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		proto := benchLimiter(t, c.algo, 10, clk)
		for i := range keep {
			if tb, ok := proto.(*Bucket); ok {
				keep[i] = tb.Clone() // a key's bucket: cloned from the rule's prototype
				continue
			}
			keep[i] = benchLimiter(t, c.algo, 10, clk)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(keep)
		t.Logf("%-14s %6.1f bytes per Limiter on the heap (struct %d bytes)", c.algo, per, structSize(keep[0]))
		if per > 200 {
			t.Errorf("%v: %.1f bytes per Limiter, budget 200", c.algo, per)
		}
	}
}

// TestAlgorithmsZeroAlloc holds the hot path to zero allocations, passing,
// refusing and queueing.
func TestAlgorithmsZeroAlloc(t *testing.T) {
	for _, c := range algoCases() {
		clk := clock.NewFake(algoEpoch)
		l := benchLimiter(t, c.algo, 10, clk)
		allocs := testing.AllocsPerRun(1000, func() {
			now := clk.Nanotime()
			if d := l.TryAcquire(now, 1, 50*time.Millisecond); d.OK() {
				l.Refund(now+int64(d.Wait), 1)
			}
			l.TryAcquire(now, 2, 0)
			testRelease(l, 1)
			_ = testRemaining(l, now)
			clk.Advance(7 * time.Millisecond)
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocs per call, want 0", c.algo, allocs)
		}
	}
}

// benchHighLimit is a limit per second high enough that calls pass.
func benchHighLimit(a Kind) float64 {
	if a == SlidingLog {
		return MaxSlidingLogLimit // 8 MiB of ring: the largest allowed
	}
	return 1e8
}

// structSize is unsafe.Sizeof of the limiter's own struct (not what it owns).
func structSize(l Limiter) uintptr { return reflect.TypeOf(l).Elem().Size() }
