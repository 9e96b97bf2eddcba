package flow

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow/internal/algo"
)

// testRemaining is the permits l reports left at now: every algorithm is
// an algo.Remainer.
func testRemaining(l limiter, now int64) float64 {
	return l.(algo.Remainer).Remaining(now)
}

// TestAlgoMirrors: the public enums and bounds that package algo has its
// own copies of hold the same numbers, since values convert between them.
func TestAlgoMirrors(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"BreakerErrorRatio", int64(BreakerErrorRatio), int64(algo.BreakerErrorRatio)},
		{"BreakerErrorCount", int64(BreakerErrorCount), int64(algo.BreakerErrorCount)},
		{"BreakerSlowRatio", int64(BreakerSlowRatio), int64(algo.BreakerSlowRatio)},
		{"BreakerClosed", int64(BreakerClosed), int64(algo.BreakerClosed)},
		{"BreakerOpen", int64(BreakerOpen), int64(algo.BreakerOpen)},
		{"BreakerHalfOpen", int64(BreakerHalfOpen), int64(algo.BreakerHalfOpen)},
		{"PriorityLow", int64(PriorityLow), int64(algo.PriorityLow)},
		{"PriorityNormal", int64(PriorityNormal), int64(algo.PriorityNormal)},
		{"PriorityHigh", int64(PriorityHigh), int64(algo.PriorityHigh)},
		{"PriorityCritical", int64(PriorityCritical), int64(algo.PriorityCritical)},
		{"MaxProbes", MaxProbes, algo.MaxProbes},
		{"MaxSlidingLogLimit", MaxSlidingLogLimit, algo.MaxSlidingLogLimit},
	} {
		if c.got != c.want {
			t.Errorf("%s: flow %d, algo %d", c.name, c.got, c.want)
		}
	}
}

// TestSpecOfEveryAlgorithm: every algorithm but the lists has a Kind of
// the same name, and specOf carries a rule's fields (defaults applied).
func TestSpecOfEveryAlgorithm(t *testing.T) {
	for _, a := range Algorithms() {
		k, ok := kindOf(a)
		if ok != !a.isList() {
			t.Fatalf("%v: has a kind %v, want %v", a, ok, !a.isList())
		}
		if ok && k.String() != a.String() {
			t.Errorf("%v: kind %v", a, k)
		}
	}
	r := Rule{Resource: "r", Algorithm: AlgoCircuitBreaker, Strategy: BreakerSlowRatio, Threshold: 0.5,
		SlowCall: time.Second, OpenFor: 3 * time.Second}.WithDefaults()
	got := specOf(&r)
	want := algo.Spec{Kind: algo.CircuitBreaker, Window: DefaultWindow, Buckets: DefaultBuckets, Breaker: algo.BreakerSpec{
		Strategy: algo.BreakerSlowRatio, Threshold: 0.5, MinRequests: DefaultMinRequests,
		SlowCall: time.Second, OpenFor: 3 * time.Second, Probes: DefaultProbes}}
	if got != want {
		t.Errorf("specOf(%+v)\n got %+v\nwant %+v", r, got, want)
	}
	r = Rule{Resource: "r", Algorithm: AlgoAdaptiveConcurrency, InitialLimit: 7}.WithDefaults()
	if got := specOf(&r).Adaptive; got != (algo.AdaptiveSpec{InitialLimit: 7, MinLimit: DefaultMinLimit,
		MaxLimit: DefaultMaxLimit, Tolerance: DefaultTolerance, Smoothing: DefaultSmoothing}) {
		t.Errorf("adaptive spec %+v", got)
	}
}
