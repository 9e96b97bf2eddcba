package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// trippedBreaker returns an engine whose breaker "pay" on "POST /pay" went
// closed -> open -> half-open -> open: two opens, one half-open.
func trippedBreaker(t *testing.T) *flow.Engine {
	t.Helper()
	clk := clock.NewFake(t0)
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules([]flow.Rule{{ID: "pay", Resource: "POST /pay", Algorithm: flow.AlgoCircuitBreaker,
		Strategy: flow.BreakerErrorCount, Threshold: 2, MinRequests: 2, OpenFor: time.Second}}); err != nil {
		t.Fatal(err)
	}
	fail := func() {
		p, err := eng.Entry("POST /pay")
		if err != nil {
			t.Fatal(err)
		}
		p.Exit(flow.WithError(errors.New("down")))
	}
	fail()
	fail()
	clk.Advance(time.Second)
	fail() // the probe fails
	return eng
}

func TestBreakerMetricsPrometheus(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(trippedBreaker(t)))
	want := `
# HELP flowgate_breaker_state State of a circuit breaker rule: 0 closed, 1 open, 2 half-open (a user or ip rule: 1 while any key is open, else 2 while any is half-open).
# TYPE flowgate_breaker_state gauge
flowgate_breaker_state{resource="POST /pay",rule="pay"} 1
# HELP flowgate_breaker_transitions_total Circuit breaker state changes by the state entered (all keys of a user or ip rule together).
# TYPE flowgate_breaker_transitions_total counter
flowgate_breaker_transitions_total{resource="POST /pay",rule="pay",to="closed"} 0
flowgate_breaker_transitions_total{resource="POST /pay",rule="pay",to="open"} 2
flowgate_breaker_transitions_total{resource="POST /pay",rule="pay",to="half_open"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameBreakerState, NameBreakerTransitions); err != nil {
		t.Error(err)
	}
}

func TestBreakerMetricsOTel(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	if _, err := RegisterOTel(trippedBreaker(t), mp); err != nil {
		t.Fatal(err)
	}
	got := collectOTel(t, reader)
	res, rule := AttrResource.String("POST /pay"), AttrRule.String("pay")
	assertMetric(t, metricdata.Metrics{Name: OTelBreakerState, Unit: "1", Data: metricdata.Gauge[int64]{
		DataPoints: []metricdata.DataPoint[int64]{i64(1, res, rule)}}}, got[OTelBreakerState])
	assertMetric(t, metricdata.Metrics{Name: OTelBreakerTransitions, Unit: "{transition}", Data: metricdata.Sum[int64]{
		Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: []metricdata.DataPoint[int64]{
			i64(0, res, rule, AttrTo.String("closed")), i64(2, res, rule, AttrTo.String("open")),
			i64(1, res, rule, AttrTo.String("half_open"))}}}, got[OTelBreakerTransitions])
}
