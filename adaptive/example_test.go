package adaptive_test

import (
	"fmt"
	"time"

	"github.com/flowgate/flowgate/adaptive"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// State.Next is the controller's rule as a pure function: feed it samples
// and watch the factor.
func ExampleState_Next() {
	cfg := adaptive.Defaults()
	var st adaptive.State
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, cpu := range []float64{0.60, 0.95, 0.95, 0.95, 0.95, 0.80} {
		now = now.Add(cfg.Period)
		st = st.Next(cfg, cpu, now)
		fmt.Printf("cpu %.2f smoothed %.3f factor %.3f %s\n", cpu, st.CPU, st.Factor, st.Decision)
	}
	// Output:
	// cpu 0.60 smoothed 0.600 factor 1.000 hold
	// cpu 0.95 smoothed 0.810 factor 1.000 hold
	// cpu 0.95 smoothed 0.894 factor 0.879 cut
	// cpu 0.95 smoothed 0.928 factor 0.879 hold
	// cpu 0.95 smoothed 0.941 factor 0.828 cut
	// cpu 0.80 smoothed 0.906 factor 0.828 hold
}

// A Controller scales an engine's adaptive rules. Here the CPU signal is
// injected and time is virtual; in a service, use NewController(eng) and
// Start.
func ExampleController() {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	eng := flow.NewEngine(flow.WithClock(clk))
	_ = eng.LoadRules([]flow.Rule{{ID: "orders", Resource: "GET /orders", Algorithm: flow.AlgoTokenBucket, Limit: 200, Adaptive: true}})

	cpu := 0.97
	c := adaptive.NewController(eng, adaptive.WithClock(clk),
		adaptive.WithSampler(adaptive.SamplerFunc(func() (float64, error) { return cpu, nil })))
	defer c.Close()
	for range 6 {
		clk.Advance(250 * time.Millisecond)
		_ = c.Step()
	}
	st := c.State()
	fmt.Printf("factor %.2f (engine %.2f), last decision %s: %s\n", c.Factor(), eng.AdaptiveFactor(), st.Decision, st.Reason)
	fmt.Printf("orders: %.0f permits/s\n", eng.Snapshot().Rules[0].EffectiveLimit)
	// Output:
	// factor 0.80 (engine 0.80), last decision hold: cpu above band, answered by a cut still taking effect
	// orders: 160 permits/s
}
