package flow

import (
	"testing"
	"time"
)

// Breaker benchmarks, on the real clock, to be read beside
// BenchmarkRateAllow and BenchmarkEntryExitPass of the same run:
//
//	go test ./flow -run '^$' -bench 'RateAllow$|EntryExitPass$|Breaker' -benchmem -count 3

var closedBreaker = Rule{ID: "cb", Resource: "r", Algorithm: AlgoCircuitBreaker, Strategy: BreakerErrorRatio,
	Threshold: 0.5, OpenFor: 5 * time.Second, Window: 10 * time.Second}

func benchBreaker(b *testing.B, rules ...Rule) {
	e := benchEngine(b, rules...)
	b.ReportAllocs()
	for b.Loop() {
		p, err := e.Entry("r")
		if err != nil {
			b.Fatal(err)
		}
		p.Exit()
	}
}

// BenchmarkBreakerEntryExit: Entry+Exit through a closed breaker alone.
func BenchmarkBreakerEntryExit(b *testing.B) { benchBreaker(b, closedBreaker) }

// BenchmarkBreakerTokenBucketEntryExit: a closed breaker and a token bucket
// on one resource.
func BenchmarkBreakerTokenBucketEntryExit(b *testing.B) { benchBreaker(b, closedBreaker, bigBucket) }

func BenchmarkBreakerEntryExitParallel(b *testing.B) {
	e := benchEngine(b, closedBreaker)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := e.Entry("r")
			if err != nil {
				b.Error(err)
				return
			}
			p.Exit()
		}
	})
}

// BenchmarkBreakerOpenRefused: a call refused by an open breaker (the
// *BlockError is its allocation).
func BenchmarkBreakerOpenRefused(b *testing.B) {
	r := closedBreaker
	r.OpenFor, r.MinRequests = time.Hour, 1
	e := benchEngine(b, r)
	p, _ := e.Entry("r")
	p.Exit(WithError(errDown))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Entry("r"); err == nil {
			b.Fatal("open breaker passed")
		}
	}
}
