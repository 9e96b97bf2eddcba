package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// TestCostMetrics: a call that reserved 10 and cost 30 on a token bucket
// shows up in flowgate_cost_total by kind, in the ratio histogram, and as
// what the rule owes; a rule that settled nothing exports no series.
func TestCostMetrics(t *testing.T) {
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Unix(1_700_000_000, 0))))
	if err := eng.LoadRules([]flow.Rule{
		{ID: "tok", Resource: "llm", Algorithm: flow.AlgoTokenBucket, Limit: 20, Window: time.Minute},
		{ID: "idle", Resource: "other", Algorithm: flow.AlgoFixedWindow, Limit: 5},
	}); err != nil {
		t.Fatal(err)
	}
	p, err := eng.Entry("llm", flow.WithTokens(10))
	if err != nil {
		t.Fatal(err)
	}
	p.Exit(flow.WithActualCost(30)) // 10 reserved of 20 stored: 10 left, 20 more charged, 10 of them owed
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(eng))
	want := `
# HELP flowgate_cost_owed What a global rule's limiter owes now, in permits, from settlements that cost more than the limit had left.
# TYPE flowgate_cost_owed gauge
flowgate_cost_owed{level="global",resource="llm",rule="tok"} 10
# HELP flowgate_cost_total ` + costHelp + `
# TYPE flowgate_cost_total counter
flowgate_cost_total{kind="actual",level="global",resource="llm",rule="tok"} 30
flowgate_cost_total{kind="charged",level="global",resource="llm",rule="tok"} 20
flowgate_cost_total{kind="estimated",level="global",resource="llm",rule="tok"} 10
flowgate_cost_total{kind="forgiven",level="global",resource="llm",rule="tok"} 0
flowgate_cost_total{kind="refunded",level="global",resource="llm",rule="tok"} 0
# HELP flowgate_cost_ratio Actual cost ÷ the estimate reserved at Entry, of the calls settled at Exit.
# TYPE flowgate_cost_ratio histogram
flowgate_cost_ratio_bucket{level="global",resource="llm",rule="tok",le="0.25"} 0
flowgate_cost_ratio_bucket{level="global",resource="llm",rule="tok",le="0.5"} 0
flowgate_cost_ratio_bucket{level="global",resource="llm",rule="tok",le="0.8"} 0
flowgate_cost_ratio_bucket{level="global",resource="llm",rule="tok",le="1"} 0
flowgate_cost_ratio_bucket{level="global",resource="llm",rule="tok",le="1.25"} 0
flowgate_cost_ratio_bucket{level="global",resource="llm",rule="tok",le="2"} 0
flowgate_cost_ratio_bucket{level="global",resource="llm",rule="tok",le="4"} 1
flowgate_cost_ratio_bucket{level="global",resource="llm",rule="tok",le="+Inf"} 1
flowgate_cost_ratio_sum{level="global",resource="llm",rule="tok"} 3
flowgate_cost_ratio_count{level="global",resource="llm",rule="tok"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameCost, NameCostRatio, NameCostOwed); err != nil {
		t.Error(err)
	}
}
