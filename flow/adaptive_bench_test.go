package flow

import "testing"

// Entry+Exit through an adaptive_concurrency rule, beside a plain
// concurrency rule and (in engine_bench_test.go) x/time/rate's Allow:
//
//	go test ./flow -run '^$' -bench 'RateAllow|EntryExit(Pass|Adaptive|Concurrency)' -benchmem -count 5
//
// On the real clock Exit measures 1 in 8 calls (WithRTSampling), and only
// those feed the limit, so the window update costs little per call.

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
