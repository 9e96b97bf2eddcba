package flow

import "testing"

// Entry+Exit through an adaptive_concurrency rule, beside a plain
// concurrency rule and (in engine_bench_test.go) x/time/rate's Allow:
//
//	go test ./flow -run '^$' -bench 'RateAllow|EntryExit(Pass|Adaptive|Concurrency)' -benchmem -count 5
//
// Every Exit of an adaptive_concurrency call reads the clock and feeds the
// limit (WithRTSampling samples only the other calls); the window update
// itself runs once a window.

var (
	adaptiveBenchRule = Rule{ID: "auto", Resource: "r", Algorithm: AlgoAdaptiveConcurrency, InitialLimit: 1000}
	concBenchRule     = Rule{ID: "conc", Resource: "r", Algorithm: AlgoConcurrency, Limit: 1000}
)

func benchEntryExit(b *testing.B, r Rule, opts ...EntryOption) {
	e := benchEngine(b, r)
	b.ReportAllocs()
	for b.Loop() {
		p, err := e.Entry("r", opts...)
		if err != nil {
			b.Fatal(err)
		}
		p.Exit()
	}
}

func benchEntryExitParallel(b *testing.B, r Rule) {
	e := benchEngine(b, r)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if p, err := e.Entry("r", WithPriority(PriorityHigh)); err == nil {
				p.Exit()
			}
		}
	})
}

func BenchmarkEntryExitAdaptive(b *testing.B) { benchEntryExit(b, adaptiveBenchRule) }

func BenchmarkEntryExitAdaptiveLow(b *testing.B) {
	benchEntryExit(b, adaptiveBenchRule, WithPriority(PriorityLow))
}

func BenchmarkEntryExitAdaptiveParallel(b *testing.B) { benchEntryExitParallel(b, adaptiveBenchRule) }

func BenchmarkEntryExitConcurrency(b *testing.B) { benchEntryExit(b, concBenchRule) }

func BenchmarkEntryExitConcurrencyParallel(b *testing.B) { benchEntryExitParallel(b, concBenchRule) }
