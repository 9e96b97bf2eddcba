package metrics

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// outboundCostEngine is an engine whose collector exports the dashboard's
// Outbound and Cost series: a retry budget that passed first attempts and
// a retry and refused one, a throttle that heard an overloaded answer, and
// a token bucket that settled a call at more than its estimate.
func outboundCostEngine(t testing.TB) *flow.Engine {
	t.Helper()
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(t0)))
	if err := eng.LoadRules([]flow.Rule{
		{ID: "rb", Resource: "GET api", Algorithm: flow.AlgoRetryBudget, MinPerSecond: 0.1},
		{ID: "thr", Resource: "GET api", Algorithm: flow.AlgoClientThrottle},
		{ID: "tok", Resource: "llm", Algorithm: flow.AlgoTokenBucket, Limit: 20, Window: time.Minute},
	}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if p, err := eng.Entry("GET api"); err == nil {
			p.Exit(flow.WithError(flow.ErrOverloaded))
		}
	}
	for range 3 {
		if p, err := eng.Entry("GET api", flow.WithRetry()); err == nil {
			p.Exit()
		}
	}
	p, err := eng.Entry("llm", flow.WithTokens(10))
	if err != nil {
		t.Fatalf("llm: the first call: %v", err)
	}
	p.Exit(flow.WithActualCost(30))
	return eng
}
