package simulate

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// runWith loads rule into a fresh engine on a fake clock and runs load.
func runWith(t *testing.T, rule *flow.Rule, svc Service, mix Mix, load float64, d, from time.Duration) Result {
	t.Helper()
	clk := clock.NewFake(Start())
	eng := flow.NewEngine(flow.WithClock(clk))
	if rule != nil {
		if err := eng.LoadRules([]flow.Rule{*rule}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := LoadRun{Service: svc, Engine: eng, Clock: clk, Resource: "svc", Mix: mix,
		Load: func(time.Duration) float64 { return load }, Seed: 1}.Run(d, from)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func adaptiveRule() *flow.Rule {
	return &flow.Rule{ID: "auto", Resource: "svc", Algorithm: flow.AlgoAdaptiveConcurrency}
}

func TestExplore(t *testing.T) {
	svc := Service{Capacity: 50, Latency: 10 * time.Millisecond}
	base := runWith(t, nil, svc, Mix{}, 0.1, 10*time.Second, 2*time.Second)
	t.Logf("no load: p50 %v p99 %v", base.P50, base.P99)
	for _, load := range []float64{0.5, 1, 2, 5, 10} {
		r := runWith(t, adaptiveRule(), svc, Mix{}, load, 40*time.Second, 20*time.Second)
		t.Logf("load %4.1f: goodput %.3f util %.3f p50 %v p99 %v limit [%v, %v]", load, r.Goodput, r.Utilisation, r.P50, r.P99, r.LimitMin, r.LimitMax)
	}
}

func TestExplore2(t *testing.T) {
	for _, c := range []int{50, 500} {
		svc := Service{Capacity: c, Latency: 10 * time.Millisecond}
		r := runWith(t, adaptiveRule(), svc, Mix{}, 3, 70*time.Second, 10*time.Second)
		conv := time.Duration(-1)
		for _, s := range r.Samples {
			if s.Limit >= 0.8*float64(c) && s.Limit <= 1.2*float64(c) {
				conv = s.T
				break
			}
		}
		t.Logf("C=%d: converged at %v; steady minute limit [%v, %v] goodput %.3f p99 %v", c, conv, r.LimitMin, r.LimitMax, r.Goodput, r.P99)
	}
	svc := Service{Capacity: 50, Latency: 10 * time.Millisecond}
	for _, st := range []float64{100, 25} {
		rule := &flow.Rule{ID: "s", Resource: "svc", Algorithm: flow.AlgoConcurrency, Limit: st}
		for _, load := range []float64{2, 5, 10} {
			r := runWith(t, rule, svc, Mix{}, load, 30*time.Second, 10*time.Second)
			t.Logf("static %v load %v: goodput %.3f p99 %v", st, load, r.Goodput, r.P99)
		}
	}
	mix := Mix{0.7, 0, 0, 0.3}
	r := runWith(t, adaptiveRule(), svc, mix, 3, 40*time.Second, 10*time.Second)
	t.Logf("30/70 at 3x: critical %.4f low %.4f goodput %.3f p99 %v limit [%v,%v]", r.AdmittedRatio(flow.PriorityCritical), r.AdmittedRatio(flow.PriorityLow), r.Goodput, r.P99, r.LimitMin, r.LimitMax)
	r = runWith(t, adaptiveRule(), svc, Mix{1}, 3, 40*time.Second, 10*time.Second)
	t.Logf("100%% low at 3x: util %.3f goodput %.3f p99 %v limit [%v,%v]", r.Utilisation, r.Goodput, r.P99, r.LimitMin, r.LimitMax)
	svc5 := Service{Capacity: 500, Latency: 10 * time.Millisecond}
	r = runWith(t, adaptiveRule(), svc5, Mix{1}, 3, 40*time.Second, 10*time.Second)
	t.Logf("C=500 100%% low at 3x: util %.3f goodput %.3f p99 %v limit [%v,%v]", r.Utilisation, r.Goodput, r.P99, r.LimitMin, r.LimitMax)
	r = runWith(t, adaptiveRule(), svc5, mix, 3, 40*time.Second, 10*time.Second)
	t.Logf("C=500 30/70 at 3x: critical %.4f low %.4f goodput %.3f p99 %v limit [%v,%v]", r.AdmittedRatio(flow.PriorityCritical), r.AdmittedRatio(flow.PriorityLow), r.Goodput, r.P99, r.LimitMin, r.LimitMax)
}
