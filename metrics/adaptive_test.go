package metrics

import (
	"strconv"
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

// adaptiveEngine has one adaptive_concurrency rule that has closed windows
// of 10ms calls: its limit grew from 4 (every window refused a call) and
// both RTT estimates are 10ms.
func adaptiveEngine(t testing.TB) (*flow.Engine, flow.AdaptiveStats) {
	t.Helper()
	clk := clock.NewFake(t0)
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules([]flow.Rule{{ID: "auto", Resource: "GET /auto", Algorithm: flow.AlgoAdaptiveConcurrency, InitialLimit: 4}}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		var held []flow.Permit
		for {
			p, err := eng.Entry("GET /auto")
			if err != nil {
				break
			}
			held = append(held, p)
		}
		clk.Advance(10 * time.Millisecond)
		for _, p := range held {
			p.Exit()
		}
	}
	st := eng.Snapshot().Rules[0].AdaptiveConcurrency
	if st == nil || st.Limit <= 4 || st.ShortRTT != 10*time.Millisecond || st.LongRTT != 10*time.Millisecond {
		t.Fatalf("adaptive stats %+v: want a limit above 4 and RTTs of 10ms", st)
	}
	return eng, *st
}

func TestCollectorAdaptiveConcurrency(t *testing.T) {
	eng, st := adaptiveEngine(t)
	want := `
# HELP flowgate_adaptive_limit Current concurrency limit of an adaptive_concurrency rule (global level), found from response times.
# TYPE flowgate_adaptive_limit gauge
flowgate_adaptive_limit{resource="GET /auto",rule="auto"} ` + strconv.FormatInt(st.Limit, 10) + `
# HELP flowgate_adaptive_rtt_seconds Response-time estimates of an adaptive_concurrency rule: short (last window's mean) and long (no-queue).
# TYPE flowgate_adaptive_rtt_seconds gauge
flowgate_adaptive_rtt_seconds{estimate="long",resource="GET /auto",rule="auto"} 0.01
flowgate_adaptive_rtt_seconds{estimate="short",resource="GET /auto",rule="auto"} 0.01
`
	if err := testutil.CollectAndCompare(NewCollector(eng), strings.NewReader(want), NameAdaptiveLimit, NameAdaptiveRTT); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(eng))
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("pedantic gather: %v", err)
	}
}

func TestOTelAdaptiveConcurrency(t *testing.T) {
	eng, st := adaptiveEngine(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	unregister, err := RegisterOTel(eng, mp)
	if err != nil {
		t.Fatal(err)
	}
	defer unregister()
	got := collectOTel(t, reader)
	res, rule := AttrResource.String("GET /auto"), AttrRule.String("auto")
	assertMetric(t, metricdata.Metrics{Name: OTelAdaptiveLimit, Unit: "{request}",
		Description: "Current concurrency limit of an adaptive_concurrency rule (global level).",
		Data:        metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{i64(st.Limit, res, rule)}}}, got[OTelAdaptiveLimit])
	assertMetric(t, metricdata.Metrics{Name: OTelAdaptiveRTT, Unit: "s",
		Description: "Response-time estimates of an adaptive_concurrency rule: short (last window) and long (no-queue).",
		Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{
			f64(0.01, res, rule, AttrEstimate.String(EstimateShort)), f64(0.01, res, rule, AttrEstimate.String(EstimateLong))}}}, got[OTelAdaptiveRTT])
}
