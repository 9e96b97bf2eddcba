package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/flowgate/flowgate/flow"
)

// shadowEngine has a shadow fixed window of 2 per hour on "GET /a" at the
// user level that saw 5 calls of one user (3 would-be refusals, all let
// through), and an enforcing rule that exports no shadow series.
func shadowEngine(t *testing.T) *flow.Engine {
	t.Helper()
	eng := fakeEngine(t, []flow.Rule{
		{ID: "try", Resource: "GET /a", Level: flow.LevelUser, Algorithm: flow.AlgoFixedWindow, Limit: 2, Window: time.Hour, Shadow: true},
		{ID: "real", Resource: "GET /a", Algorithm: flow.AlgoFixedWindow, Limit: 100},
	})
	for range 5 {
		p, err := eng.Entry("GET /a", flow.WithUser("u"))
		if err != nil {
			t.Fatal(err)
		}
		p.Exit()
	}
	return eng
}

func TestShadowMetricsPrometheus(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(shadowEngine(t)))
	want := `
# HELP flowgate_shadow_blocked_total Calls a rule in shadow would have refused; they were let through.
# TYPE flowgate_shadow_blocked_total counter
flowgate_shadow_blocked_total{level="user",resource="GET /a",rule="try"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameShadowBlocked); err != nil {
		t.Error(err)
	}
	// The calls passed: all five count as passed, none as blocked.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != NameRequests {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					by[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	if by[ResultPassed] != 5 || by[ResultBlocked] != 0 {
		t.Errorf("requests by result = %v, want 5 passed, 0 blocked", by)
	}
}

func TestShadowMetricsOTel(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	if _, err := RegisterOTel(shadowEngine(t), mp); err != nil {
		t.Fatal(err)
	}
	got := collectOTel(t, reader)
	assertMetric(t, metricdata.Metrics{Name: OTelShadowBlocked, Unit: "{request}", Data: metricdata.Sum[int64]{
		Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: []metricdata.DataPoint[int64]{
			i64(3, AttrResource.String("GET /a"), AttrRule.String("try"), AttrLevel.String("user"))}}}, got[OTelShadowBlocked])
}
