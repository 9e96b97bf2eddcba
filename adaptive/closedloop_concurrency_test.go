package adaptive_test

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/adaptive"
	"github.com/flowgate/flowgate/adaptive/simulate"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// The closed-loop figures of adaptive_concurrency and priority shedding
// (issue 18), on a service of capacity C = 50 concurrent calls and base
// latency L = 10ms (simulate.Service), driving the real engine. The README
// quotes the figures these tests log.
//
// They simulate millions of calls. The race detector makes that about ten
// times slower, so under -race they run a reduced set (C = 50 only, one
// offered load, shorter runs) with the same assertions; the full set runs
// with plain `go test ./adaptive`.

// reduced reports whether to run the reduced set, saying so in the log.
func reduced(t *testing.T) bool {
	t.Helper()
	if raceEnabled {
		t.Log("race detector on: reduced set (run `go test ./adaptive -run '" + t.Name() + "' -v` for all figures)")
	}
	return raceEnabled
}

var svc50 = simulate.Service{Capacity: 50, Latency: 10 * time.Millisecond}

func simulateOK(t *testing.T, s simulate.Service, set simulate.Setup, d, from time.Duration) simulate.Result {
	t.Helper()
	r, err := s.Simulate(set, d, from)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// cpuFactorAlone steps a real adaptive.Controller with the service's
// utilisation as its CPU reading, in front of an adaptive token bucket at
// the highest offered rate: the CPU factor alone, no concurrency limit.
func cpuFactorAlone(s simulate.Service, load float64) simulate.Setup {
	return simulate.Setup{
		Rules: []flow.Rule{{ID: "cpu", Resource: "svc", Algorithm: flow.AlgoTokenBucket, Limit: 10 * s.Rate(), Adaptive: true}},
		Load:  simulate.Constant(load), Every: 250 * time.Millisecond, Seed: 1,
		Attach: func(eng *flow.Engine, clk *clock.Fake) func(simulate.Sample) {
			var cpu float64
			c := adaptive.NewController(eng, adaptive.WithClock(clk),
				adaptive.WithSampler(adaptive.SamplerFunc(func() (float64, error) { return cpu, nil })))
			return func(s simulate.Sample) {
				cpu = s.Utilisation
				_ = c.Step()
			}
		},
	}
}

func TestAdaptiveConcurrencyOverload(t *testing.T) {
	noLoad := simulateOK(t, svc50, simulate.Setup{Load: simulate.Constant(0.1), Seed: 1}, 10*time.Second, 2*time.Second)
	t.Logf("no load (0.1x, no rule): p50 %v p99 %v", noLoad.P50, noLoad.P99)
	loads := []float64{0.5, 2, 5, 10}
	if reduced(t) {
		loads = []float64{5}
	}
	for _, load := range loads {
		set := func(rules ...flow.Rule) simulate.Setup {
			return simulate.Setup{Rules: rules, Load: simulate.Constant(load), Seed: 1}
		}
		auto := simulateOK(t, svc50, set(simulate.AdaptiveRule()), 40*time.Second, 20*time.Second)
		high := simulateOK(t, svc50, set(simulate.StaticRule(100)), 30*time.Second, 10*time.Second)
		low := simulateOK(t, svc50, set(simulate.StaticRule(25)), 30*time.Second, 10*time.Second)
		cpu := simulateOK(t, svc50, cpuFactorAlone(svc50, load), 40*time.Second, 20*time.Second)
		t.Logf("%4.1fx  adaptive goodput %.3f p99 %v limit %v..%v | static 2C goodput %.3f p99 %v | static C/2 goodput %.3f p99 %v | CPU factor alone goodput %.3f p99 %v",
			load, auto.Goodput, auto.P99, auto.LimitMin, auto.LimitMax, high.Goodput, high.P99, low.Goodput, low.P99, cpu.Goodput, cpu.P99)
		if load < 1 {
			if auto.Goodput < 0.9*load {
				t.Errorf("%vx: adaptive goodput %.3f, want the offered %v served", load, auto.Goodput, load)
			}
			continue
		}
		if auto.Goodput < 0.9 || auto.P99 > 2*noLoad.P99 {
			t.Errorf("%vx: adaptive goodput %.3f (want >= 0.9), p99 %v (want <= 2 x %v)", load, auto.Goodput, auto.P99, noLoad.P99)
		}
		if high.P99 <= auto.P99 || low.Goodput >= auto.Goodput {
			t.Errorf("%vx: static 2C p99 %v not above adaptive %v, or static C/2 goodput %.3f not below %.3f",
				load, high.P99, auto.P99, low.Goodput, auto.Goodput)
		}
	}
}

func TestAdaptiveConcurrencyConvergesAndHolds(t *testing.T) {
	caps, steady := []int{50, 500}, time.Minute
	if reduced(t) {
		caps, steady = []int{50}, 20*time.Second
	}
	for _, c := range caps {
		s := simulate.Service{Capacity: c, Latency: 10 * time.Millisecond}
		r := simulateOK(t, s, simulate.Setup{Rules: []flow.Rule{simulate.AdaptiveRule()}, Load: simulate.Constant(3), Seed: 1},
			10*time.Second+steady, 10*time.Second)
		at, _ := simulate.Converged(r.Samples, float64(c), 0.2)
		t.Logf("C=%d at 3x: within 20%% of C after %v; steady %v from 10s: limit %v..%v (peak-to-peak %v = %.1f%% of C), goodput %.3f, p99 %v",
			c, at, steady, r.LimitMin, r.LimitMax, r.LimitMax-r.LimitMin, 100*(r.LimitMax-r.LimitMin)/float64(c), r.Goodput, r.P99)
		// Twice the time docs/adaptive.md states (0.4s and 1.7s).
		if within := map[int]time.Duration{50: 800 * time.Millisecond, 500: 3400 * time.Millisecond}[c]; at < 0 || at > within {
			t.Errorf("C=%d: limit within 20%% of C after %v, want within %v", c, at, within)
		}
		// It stays in the band, not only enters it: the whole steady
		// stretch within 20% of C, and still (docs/adaptive.md states
		// peak-to-peak 2% of C; held to twice that).
		if lo, hi := 0.8*float64(c), 1.2*float64(c); r.LimitMin < lo || r.LimitMax > hi {
			t.Errorf("C=%d: limit %v..%v over the steady stretch, want within 20%% of C (%.0f..%.0f)", c, r.LimitMin, r.LimitMax, lo, hi)
		}
		if p2p := r.LimitMax - r.LimitMin; p2p > 0.04*float64(c) {
			t.Errorf("C=%d: limit peak-to-peak %v over the steady stretch, want <= 4%% of C", c, p2p)
		}
	}
}

func TestPriorityShedding(t *testing.T) {
	caps := []int{50, 500}
	if reduced(t) {
		caps = caps[:1]
	}
	for _, c := range caps {
		s := simulate.Service{Capacity: c, Latency: 10 * time.Millisecond}
		mix := simulate.Setup{Rules: []flow.Rule{simulate.AdaptiveRule()}, Load: simulate.Constant(3), Seed: 1,
			Mix: simulate.Mix{0.7, 0, 0, 0.3}}
		r := simulateOK(t, s, mix, 40*time.Second, 10*time.Second)
		crit, low := r.AdmittedRatio(flow.PriorityCritical), r.AdmittedRatio(flow.PriorityLow)
		t.Logf("C=%d, 30%% critical / 70%% low at 3x: critical admitted %.4f, low %.4f (shed for priority %d), goodput %.3f, p99 %v",
			c, crit, low, r.Shed[0], r.Goodput, r.P99)
		if crit < 0.99 || low > 0.2 || r.Shed[0] == 0 {
			t.Errorf("C=%d: critical admitted %.4f (want >= 0.99), low %.4f (want the shedding on low)", c, crit, low)
		}
		lowOnly := mix
		lowOnly.Mix = simulate.Mix{1}
		r = simulateOK(t, s, lowOnly, 40*time.Second, 10*time.Second)
		t.Logf("C=%d, 100%% low at 3x: utilisation %.3f, goodput %.3f, p99 %v, limit %v..%v", c, r.Utilisation, r.Goodput, r.P99, r.LimitMin, r.LimitMax)
		if r.Utilisation < 0.9 {
			t.Errorf("C=%d: all-low traffic uses %.3f of the service, want >= 0.9", c, r.Utilisation)
		}
	}
	// The CPU factor alone sheds low before critical too.
	cpu := cpuFactorAlone(svc50, 3)
	cpu.Mix = simulate.Mix{0.7, 0, 0, 0.3}
	r := simulateOK(t, svc50, cpu, 40*time.Second, 20*time.Second)
	t.Logf("CPU factor alone, 30%% critical / 70%% low at 3x: critical admitted %.4f, low %.4f", r.AdmittedRatio(flow.PriorityCritical), r.AdmittedRatio(flow.PriorityLow))
	if r.AdmittedRatio(flow.PriorityLow) >= r.AdmittedRatio(flow.PriorityCritical) {
		t.Errorf("CPU factor: low admitted %.4f, critical %.4f: want low shed first", r.AdmittedRatio(flow.PriorityLow), r.AdmittedRatio(flow.PriorityCritical))
	}
}
