package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/flowgate/flowgate/flow"
)

// listsEngine refuses, on "GET /a", 2 calls from a denied IPv4 network, 1
// from a denied IPv6 one, and 3 calls of origins not on the allow list;
// the user-level allow list on "GET /b" has refused nothing yet (its
// series is still exported, at 0).
func listsEngine(t *testing.T) *flow.Engine {
	t.Helper()
	eng := fakeEngine(t, []flow.Rule{
		{ID: "nets", Resource: "GET /a", Level: flow.LevelIP, Algorithm: flow.AlgoDeny, Values: []string{"10.0.0.0/8", "2001:db8::/32"}},
		{ID: "origins", Resource: "GET /a", Level: flow.LevelParam, Param: "origin", Algorithm: flow.AlgoAllow, Values: []string{"web", "mobile"}},
		{ID: "staff", Resource: "GET /b", Level: flow.LevelUser, Algorithm: flow.AlgoAllow, Values: []string{"ann"}},
	})
	for _, c := range []struct {
		opts []flow.EntryOption
		pass bool
	}{
		{[]flow.EntryOption{flow.WithIP("10.1.2.3"), flow.WithParam("origin", "web")}, false},
		{[]flow.EntryOption{flow.WithIP("10.9.9.9")}, false},
		{[]flow.EntryOption{flow.WithIP("2001:db8::7"), flow.WithParam("origin", "web")}, false},
		{[]flow.EntryOption{flow.WithIP("192.0.2.1"), flow.WithParam("origin", "web")}, true},
		{[]flow.EntryOption{flow.WithIP("192.0.2.1"), flow.WithParam("origin", "bot")}, false},
		{[]flow.EntryOption{flow.WithParam("origin", "cli")}, false},
		{[]flow.EntryOption{flow.WithParam("origin", "tv")}, false},
	} {
		p, err := eng.Entry("GET /a", c.opts...)
		if (err == nil) != c.pass {
			t.Fatalf("Entry(%v): %v, want pass %v", c.opts, err, c.pass)
		}
		if err == nil {
			p.Exit()
		}
	}
	p, err := eng.Entry("GET /b", flow.WithUser("ann"))
	if err != nil {
		t.Fatal(err)
	}
	p.Exit()
	return eng
}

// TestListRefusalsPrometheusAndOTel: the same series, with the same
// values, through the collector and through RegisterOTel read by an SDK
// manual reader.
func TestListRefusalsPrometheusAndOTel(t *testing.T) {
	eng := listsEngine(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(eng))
	want := `
# HELP flowgate_list_refusals_total ` + listRefusalsHelp + `
# TYPE flowgate_list_refusals_total counter
flowgate_list_refusals_total{level="ip",reason="denied",resource="GET /a"} 3
flowgate_list_refusals_total{level="param",reason="not_allowed",resource="GET /a"} 3
flowgate_list_refusals_total{level="user",reason="not_allowed",resource="GET /b"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameListRefusals); err != nil {
		t.Error(err)
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	if _, err := RegisterOTel(eng, mp); err != nil {
		t.Fatal(err)
	}
	a, b := AttrResource.String("GET /a"), AttrResource.String("GET /b")
	denied, notAllowed := AttrReason.String(ReasonDenied), AttrReason.String(ReasonNotAllowed)
	assertMetric(t, metricdata.Metrics{Name: OTelListRefusals, Unit: "{request}", Data: metricdata.Sum[int64]{
		Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: []metricdata.DataPoint[int64]{
			i64(3, a, AttrLevel.String("ip"), denied),
			i64(3, a, AttrLevel.String("param"), notAllowed),
			i64(0, b, AttrLevel.String("user"), notAllowed),
		}}}, collectOTel(t, reader)[OTelListRefusals])
}
