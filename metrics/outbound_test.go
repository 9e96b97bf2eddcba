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

// TestOutboundMetrics: a retry budget with room for one retry passes 5
// first attempts and 2 retries (0.1/s over 10s, plus 5 × 0.2) and refuses
// the third; a throttle whose backend refused its one call shows its
// refusal probability, (1 - 0)/(1 + 1).
func TestOutboundMetrics(t *testing.T) {
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Unix(1_700_000_000, 0))))
	if err := eng.LoadRules([]flow.Rule{
		{ID: "rb", Resource: "GET api", Algorithm: flow.AlgoRetryBudget, MinPerSecond: 0.1},
		{ID: "thr", Resource: "GET other", Algorithm: flow.AlgoClientThrottle},
	}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		p, err := eng.Entry("GET api")
		if err != nil {
			t.Fatal(err)
		}
		p.Exit()
	}
	for i := range 3 {
		p, err := eng.Entry("GET api", flow.WithRetry())
		if (err == nil) != (i < 2) {
			t.Fatalf("retry %d: %v", i, err)
		}
		p.Exit()
	}
	p, err := eng.Entry("GET other")
	if err != nil {
		t.Fatal(err)
	}
	p.Exit(flow.WithError(flow.ErrOverloaded))
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(eng))
	want := `
# HELP flowgate_client_throttle_probability ` + throttleProbHelp + `
# TYPE flowgate_client_throttle_probability gauge
flowgate_client_throttle_probability{resource="GET other",rule="thr"} 0.5
# HELP flowgate_outbound_attempts_total ` + attemptsHelp + `
# TYPE flowgate_outbound_attempts_total counter
flowgate_outbound_attempts_total{kind="first",resource="GET api",rule="rb"} 5
flowgate_outbound_attempts_total{kind="retry",resource="GET api",rule="rb"} 2
# HELP flowgate_outbound_refused_total ` + outRefusedHelp + `
# TYPE flowgate_outbound_refused_total counter
flowgate_outbound_refused_total{algorithm="client_throttle",resource="GET other",rule="thr"} 0
flowgate_outbound_refused_total{algorithm="retry_budget",resource="GET api",rule="rb"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameOutboundAttempts, NameOutboundRefused, NameThrottleProb); err != nil {
		t.Error(err)
	}
}
