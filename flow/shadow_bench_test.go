package flow

import (
	"testing"
	"time"
)

// Entry+Exit through a shadow rule, beside BenchmarkRateAllow and
// BenchmarkEntryExitPass (the same rule enforcing) in the same run:
//
//	go test ./flow -run '^$' -bench 'RateAllow$|EntryExitPass$|Shadow' -benchmem -count 3

// benchBreaker (breaker_bench_test.go) is Entry+Exit of "r" under the
// rules given; TestShadowAllocations checks that the refusal path counts.

func BenchmarkShadowEntryExitPass(b *testing.B) {
	r := bigBucket
	r.Shadow = true
	benchBreaker(b, r)
}

// BenchmarkShadowEntryExitRefused: every call is one the shadow rule would
// have refused; it is counted and goes on (logger silent: the default).
func BenchmarkShadowEntryExitRefused(b *testing.B) {
	benchBreaker(b, Rule{ID: "tb", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1, Window: time.Hour, Shadow: true})
}

func TestShadowAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumented builds allocate")
	}
	pass := bigBucket
	pass.Shadow = true
	refused := Rule{ID: "tight", Resource: "t", Algorithm: AlgoFixedWindow, Limit: 1, Window: time.Hour, Shadow: true}
	brk := Rule{ID: "b", Resource: "b", Algorithm: AlgoCircuitBreaker, Strategy: BreakerErrorCount,
		Threshold: 1, MinRequests: 1, OpenFor: time.Hour, Shadow: true}
	e, _ := newTestEngine(t, pass, refused, brk)
	p, _ := e.Entry("b")
	p.Exit(WithError(errDown)) // the breaker opens
	for _, res := range []string{"r", "t", "b"} {
		call := func() {
			p, err := e.Entry(res)
			if err != nil {
				t.Fatal(err)
			}
			p.Exit()
		}
		call()
		if n := testing.AllocsPerRun(1000, call); n != 0 {
			t.Errorf("%s: %v allocs per call, want 0", res, n)
		}
	}
	if tight, b := shadowCount(e, "tight"), shadowCount(e, "b"); tight < 1000 || b < 1000 {
		t.Errorf("ShadowBlocked tight %d, b %d: the refusal paths did not run", tight, b)
	}
}
