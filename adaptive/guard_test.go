package adaptive_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/flowgate/flowgate/adaptive"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// The system guard against a real engine: a steady 1000 calls/s, each
// taking 20ms, sustains 20 in flight; while the CPU is hot the guard admits
// no more than that, and it switches off when the CPU cools.
func TestSystemGuardBlocksAboveBound(t *testing.T) {
	clk := clock.NewFake(start)
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules([]flow.Rule{{ID: "roomy", Resource: "api", Algorithm: flow.AlgoTokenBucket, Limit: 1e9}}); err != nil {
		t.Fatal(err)
	}
	var open []flow.Permit
	for range 1000 { // one call per ms, each exits 20ms after it entered
		p, err := eng.Entry("api")
		if err != nil {
			t.Fatalf("warm-up traffic blocked: %v", err)
		}
		open = append(open, p)
		clk.Advance(time.Millisecond)
		if len(open) >= 20 {
			open[0].Exit()
			open = open[1:]
		}
	}
	w := eng.Snapshot().Resources[0].Recent
	bound := float64(w.Completed) / w.Span.Seconds() * w.MinRT.Seconds()
	want := int64(math.Floor(bound)) + 1
	t.Logf("recent: %d completed over %v, min RT %v: bound %.2f in flight, limit %d", w.Completed, w.Span, w.MinRT, bound, want)

	cpu := &cpuSignal{}
	cpu.set(0.95)
	c := adaptive.NewController(eng, adaptive.WithClock(clk), adaptive.WithSampler(cpu), adaptive.WithSystemGuard(0.9))
	if err := c.Step(); err != nil {
		t.Fatal(err)
	}
	if got := eng.Snapshot().SystemLimit; got != want {
		t.Fatalf("system limit = %d, want %d", got, want)
	}
	if got := c.State().SystemLimit; got != want {
		t.Errorf("State().SystemLimit = %d, want %d", got, want)
	}
	// The engine counts the calls admitted since the guard switched on
	// (flow.Engine.SetSystemLimit): exactly `want` more pass, then the guard
	// refuses.
	passed := 0
	var err error
	for passed <= 2*int(want) {
		var p flow.Permit
		if p, err = eng.Entry("api"); err != nil {
			break
		}
		open = append(open, p)
		passed++
	}
	var be *flow.BlockError
	if passed != int(want) || !errors.As(err, &be) || be.Level != flow.LevelSystem {
		t.Fatalf("with the guard on: %d calls passed, then err = %v; want %d, then a LevelSystem block", passed, err, want)
	}
	open[len(open)-1].Exit() // one exits: one more may pass
	open = open[:len(open)-1]
	if p, err := eng.Entry("api"); err != nil {
		t.Fatalf("after an Exit: %v, want admitted", err)
	} else {
		open = append(open, p)
	}
	cpu.set(0.3)
	for range 2 {
		clk.Advance(250 * time.Millisecond)
		_ = c.Step()
	}
	if got := eng.Snapshot().SystemLimit; got != 0 {
		t.Errorf("after cooling (cpu %.3f): system limit = %d, want 0 (off)", c.State().CPU, got)
	}
	if _, err := eng.Entry("api"); err != nil {
		t.Errorf("guard off: %v", err)
	}
	for _, p := range open {
		p.Exit()
	}
}
