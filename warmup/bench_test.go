package warmup

import (
	"context"
	"testing"

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
