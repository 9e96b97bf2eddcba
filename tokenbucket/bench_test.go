package tokenbucket

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"golang.org/x/time/rate"
)

// The hot path of the flow engine: take one permit or be refused at once.
// Compared with golang.org/x/time/rate's Allow on the real clock, at a rate
// where nearly every call passes and one where nearly every call is refused.

var benchRates = []struct {
	name string
	rate float64
}{
	{"pass", 1e9},
	{"block", 100},
}

func BenchmarkTryAcquire(b *testing.B) {
	ctx := context.Background()
	for _, r := range benchRates {
		b.Run(r.name+"/serial", func(b *testing.B) {
			l := mustBursty(b, r.rate)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = l.TryAcquire(ctx, 1, 0)
			}
		})
		b.Run(r.name+"/parallel", func(b *testing.B) {
			l := mustBursty(b, r.rate)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = l.TryAcquire(ctx, 1, 0)
				}
			})
		})
	}
}

func BenchmarkXTimeRateAllow(b *testing.B) {
	for _, r := range benchRates {
		b.Run(r.name+"/serial", func(b *testing.B) {
			l := rate.NewLimiter(rate.Limit(r.rate), int(r.rate))
			b.ReportAllocs()
			for b.Loop() {
				_ = l.Allow()
			}
		})
		b.Run(r.name+"/parallel", func(b *testing.B) {
			l := rate.NewLimiter(rate.Limit(r.rate), int(r.rate))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_ = l.Allow()
				}
			})
		})
	}
}

// BenchmarkTryReserveAt is the engine's call: the clock is read by the caller.
func BenchmarkTryReserveAt(b *testing.B) {
	c := clock.Real()
	for _, r := range benchRates {
		b.Run(r.name, func(b *testing.B) {
			l := mustBursty(b, r.rate)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = l.TryReserveAt(clock.Nanotime(c), 1, 0)
			}
		})
		b.Run(r.name+"/parallel", func(b *testing.B) {
			l := mustBursty(b, r.rate)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = l.TryReserveAt(clock.Nanotime(c), 1, 0)
				}
			})
		})
	}
}

func BenchmarkAcquireWarmingUp(b *testing.B) {
	l, err := NewWarmingUp(1e9, 1, WithClock(clock.Real()))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = l.Reserve(1)
	}
	_ = ctx
}

func mustBursty(b *testing.B, r float64) *Limiter {
	b.Helper()
	l, err := NewBursty(r, WithClock(clock.Real()))
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkVersusXTimeRate runs both libraries in alternating chunks of
// calls, so that both see the same machine load (the CPUs here are shared),
// and reports each one's wall and CPU nanoseconds per call and the ratios
// (flowgate / x/time/rate). Its own ns/op counts a pair of calls.
func BenchmarkVersusXTimeRate(b *testing.B) {
	ctx := context.Background()
	for _, r := range benchRates {
		for _, goroutines := range []int{1, 2} {
			name := r.name + "/serial"
			if goroutines > 1 {
				name = r.name + "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				ours := mustBursty(b, r.rate)
				theirs := rate.NewLimiter(rate.Limit(r.rate), int(r.rate))
				b.ReportAllocs()
				const chunk = 1 << 14
				var o, x chunkCost
				calls := 0
				for calls < b.N {
					o.add(runChunk(goroutines, chunk, func() { _, _ = ours.TryAcquire(ctx, 1, 0) }))
					x.add(runChunk(goroutines, chunk, func() { _ = theirs.Allow() }))
					calls += chunk
				}
				n := float64(calls)
				b.ReportMetric(float64(o.wall)/n, "flowgate-wall-ns/call")
				b.ReportMetric(float64(x.wall)/n, "xrate-wall-ns/call")
				b.ReportMetric(float64(o.wall)/float64(x.wall), "wall-ratio")
				if x.cpu > 0 {
					b.ReportMetric(float64(o.cpu)/n, "flowgate-cpu-ns/call")
					b.ReportMetric(float64(x.cpu)/n, "xrate-cpu-ns/call")
					b.ReportMetric(float64(o.cpu)/float64(x.cpu), "cpu-ratio")
				}
			})
		}
	}
}

type chunkCost struct{ wall, cpu time.Duration }

func (c *chunkCost) add(d chunkCost) { c.wall += d.wall; c.cpu += d.cpu }

// runChunk makes n calls of f spread over g goroutines.
func runChunk(g, n int, f func()) chunkCost {
	cpu, start := cpuTime(), time.Now()
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n / g {
				f()
			}
		}()
	}
	wg.Wait()
	return chunkCost{wall: time.Since(start), cpu: cpuTime() - cpu}
}

// BenchmarkReserveSteady is the limiter alone, without a clock read: now
// advances a microsecond a call, at a rate that keeps permits stored
// (pass: every call a grant) or one that refuses nearly every call (block).
// Deterministic, so instruction counts compare between versions.
func BenchmarkReserveSteady(b *testing.B) {
	for _, r := range []struct {
		name string
		rate float64
	}{{"pass", 2e6}, {"block", 100}} {
		b.Run(r.name, func(b *testing.B) {
			c := clock.NewFake(time.Unix(0, 0))
			l, err := NewBursty(r.rate, WithClock(c))
			if err != nil {
				b.Fatal(err)
			}
			now := c.Nanotime()
			b.ReportAllocs()
			for b.Loop() {
				now += int64(time.Microsecond)
				_, _ = l.TryReserveAt(now, 1, 0)
			}
		})
	}
}
