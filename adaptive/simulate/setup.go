package simulate

import (
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// Setup is what stands in front of a Service in one LoadRun: the rules (on
// resource "svc"), the traffic, and anything else that steers the engine.
type Setup struct {
	Rules []flow.Rule // for resource "svc"; none: everything passes
	Mix   Mix
	Load  func(t time.Duration) float64 // offered, multiples of Service.Rate
	Every time.Duration                 // sample period; default 100ms
	Seed  uint64
	// Attach, when set, is called with the engine and its clock before the
	// run; the func it returns gets every sample (e.g. to step a CPU
	// controller that reads Sample.Utilisation as the CPU).
	Attach func(eng *flow.Engine, clk *clock.Fake) func(Sample)
}

// Simulate runs set against s for d on a fresh engine and clock, measuring
// from on.
func (s Service) Simulate(set Setup, d, from time.Duration) (Result, error) {
	clk := clock.NewFake(Start())
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules(set.Rules); err != nil {
		return Result{}, err
	}
	run := LoadRun{Service: s, Engine: eng, Clock: clk, Resource: "svc", Load: set.Load, Mix: set.Mix,
		Every: set.Every, Seed: set.Seed}
	if set.Attach != nil {
		run.OnSample = set.Attach(eng, clk)
	}
	return run.Run(d, from)
}

// Constant is a load function that offers f at all times.
func Constant(f float64) func(time.Duration) float64 { return func(time.Duration) float64 { return f } }

// AdaptiveRule is an adaptive_concurrency rule on "svc" with every default.
func AdaptiveRule() flow.Rule {
	return flow.Rule{ID: "auto", Resource: "svc", Algorithm: flow.AlgoAdaptiveConcurrency}
}

// StaticRule is a concurrency rule on "svc" capped at limit.
func StaticRule(limit float64) flow.Rule {
	return flow.Rule{ID: "static", Resource: "svc", Algorithm: flow.AlgoConcurrency, Limit: limit}
}

// Converged is the first sample time at which the limit is within frac of
// target and the index of that sample; -1 when never.
func Converged(samples []Sample, target, frac float64) (time.Duration, int) {
	for i, s := range samples {
		if s.Limit >= target*(1-frac) && s.Limit <= target*(1+frac) {
			return s.T, i
		}
	}
	return -1, -1
}
