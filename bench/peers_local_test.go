package bench

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"go.uber.org/ratelimit"
	xrate "golang.org/x/time/rate"
)

// The in-process comparison: one limiter decision per op, on the real
// clock, each side doing the least its library needs for that decision.
//
//	cd bench && go test -run '^$' -bench 'Peers(Pass|Block)' -benchmem
//
// flowgate's op is Entry + Exit on an Engine (rule lookup, the decision,
// statistics); x/time/rate's is Limiter.Allow; uber's is Limiter.Take.
// uber-go/ratelimit is a blocking pacer: Take sleeps until the next slot
// and has no way to refuse. It is measured only on the pass path at 1e9/s,
// where no slot is ever ahead of the caller, so Take never sleeps and its
// op is its bookkeeping alone; a block workload does not exist for it.

// passRate is a rate no benchmark reaches: every call passes.
const passRate = 1e9

// peerEngine is an Engine holding rules, failing the benchmark on a bad rule.
func peerEngine(tb testing.TB, opts []flow.Option, rules ...flow.Rule) *flow.Engine {
	tb.Helper()
	e := flow.NewEngine(opts...)
	if err := e.LoadRules(rules); err != nil {
		tb.Fatal(err)
	}
	return e
}

// passRule admits every call: a token bucket of 1e9/s holding 1e9 permits.
var passRule = flow.Rule{ID: "pass", Resource: "r", Algorithm: flow.AlgoTokenBucket, Limit: passRate}

// blockRule admits one call an hour; primeBlocked spends it.
var blockRule = flow.Rule{ID: "block", Resource: "r", Algorithm: flow.AlgoTokenBucket, Limit: 1, Window: time.Hour}

// primeBlocked spends what the block rule holds: Guava's bucket gives its
// stored permit, then one fresh permit the next call pays for.
func primeBlocked(e *flow.Engine) {
	for range 2 {
		if p, err := e.Entry("r"); err == nil {
			p.Exit()
		}
	}
}

func BenchmarkPeersPass(b *testing.B) {
	b.Run("flowgate", func(b *testing.B) {
		e := peerEngine(b, nil, passRule)
		b.ReportAllocs()
		for b.Loop() {
			p, err := e.Entry("r")
			if err != nil {
				b.Fatal(err)
			}
			p.Exit()
		}
	})
	b.Run("xrate", func(b *testing.B) {
		l := xrate.NewLimiter(passRate, passRate)
		b.ReportAllocs()
		for b.Loop() {
			if !l.Allow() {
				b.Fatal("x/time/rate refused")
			}
		}
	})
	b.Run("uber", func(b *testing.B) {
		l := ratelimit.New(passRate)
		b.ReportAllocs()
		for b.Loop() {
			l.Take()
		}
	})
}

func BenchmarkPeersBlock(b *testing.B) {
	b.Run("flowgate", func(b *testing.B) {
		e := peerEngine(b, nil, blockRule)
		primeBlocked(e)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Entry("r"); err == nil {
				b.Fatal("flowgate passed")
			}
		}
	})
	// Decide refuses as Entry does, with the refusal returned by value:
	// what flowhttp's and flowgrpc's middleware call.
	b.Run("flowgate-decide", func(b *testing.B) {
		e := peerEngine(b, nil, blockRule)
		primeBlocked(e)
		b.ReportAllocs()
		for b.Loop() {
			if e.Decide("r").Allowed {
				b.Fatal("flowgate passed")
			}
		}
	})
	b.Run("xrate", func(b *testing.B) {
		l := xrate.NewLimiter(xrate.Every(time.Hour), 1)
		l.Allow()
		b.ReportAllocs()
		for b.Loop() {
			if l.Allow() {
				b.Fatal("x/time/rate passed")
			}
		}
	})
}

// BenchmarkPeersPassParallel: every P calls one shared limiter. flowgate
// reports blocked/op: a goroutine preempted between reading the clock and
// deciding holds a stale instant, which its bucket may refuse even at 1e9/s.
func BenchmarkPeersPassParallel(b *testing.B) {
	b.Run("flowgate", func(b *testing.B) {
		e := peerEngine(b, nil, passRule)
		var blocked atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := e.Entry("r")
				if err != nil {
					blocked.Add(1)
					continue
				}
				p.Exit()
			}
		})
		b.ReportMetric(float64(blocked.Load())/float64(b.N), "blocked/op")
	})
	b.Run("xrate", func(b *testing.B) {
		l := xrate.NewLimiter(passRate, passRate)
		var blocked atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !l.Allow() {
					blocked.Add(1)
				}
			}
		})
		b.ReportMetric(float64(blocked.Load())/float64(b.N), "blocked/op")
	})
	b.Run("uber", func(b *testing.B) {
		l := ratelimit.New(passRate)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Take()
			}
		})
	})
}

func BenchmarkPeersBlockParallel(b *testing.B) {
	b.Run("flowgate", func(b *testing.B) {
		e := peerEngine(b, nil, blockRule)
		primeBlocked(e)
		var passed atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := e.Entry("r"); err == nil {
					passed.Add(1)
				}
			}
		})
		if passed.Load() > 0 {
			b.Fatalf("flowgate passed %d calls", passed.Load())
		}
	})
	b.Run("xrate", func(b *testing.B) {
		l := xrate.NewLimiter(xrate.Every(time.Hour), 1)
		l.Allow()
		var passed atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if l.Allow() {
					passed.Add(1)
				}
			}
		})
		if passed.Load() > 0 {
			b.Fatalf("x/time/rate passed %d calls", passed.Load())
		}
	})
}
