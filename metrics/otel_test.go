package metrics

import (
	"context"
	"slices"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/flowgate/flowgate/flow"
)

// collectOTel gathers one collection and returns flowgate's metrics by name.
func collectOTel(t *testing.T, r sdkmetric.Reader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, ScopeName)
		}
		for _, m := range sm.Metrics {
			if _, dup := out[m.Name]; dup {
				t.Errorf("metric %s twice", m.Name)
			}
			out[m.Name] = m
		}
	}
	return out
}

func i64(v int64, kv ...attribute.KeyValue) metricdata.DataPoint[int64] {
	return metricdata.DataPoint[int64]{Attributes: attribute.NewSet(kv...), Value: v}
}

func f64(v float64, kv ...attribute.KeyValue) metricdata.DataPoint[float64] {
	return metricdata.DataPoint[float64]{Attributes: attribute.NewSet(kv...), Value: v}
}

// assertMetric compares all but timestamps and the description, which
// must merely be there.
func assertMetric(t *testing.T, want, got metricdata.Metrics) {
	t.Helper()
	if got.Description == "" {
		t.Errorf("%s: no description", want.Name)
	}
	want.Description = got.Description
	metricdatatest.AssertEqual(t, want, got, metricdatatest.IgnoreTimestamp())
}

func TestOTelInstruments(t *testing.T) {
	eng, _, tr := driveTraffic(t)
	src := newFakeSources()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(NewOTelProducer(eng, src.options()...)))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	unregister, err := RegisterOTel(eng, mp, src.options()...)
	if err != nil {
		t.Fatal(err)
	}
	got := collectOTel(t, reader)

	res := AttrResource.String
	orders, slow, idle := res("GET /orders"), res("GET /slow"), res("idle")
	passed, waited, blocked := AttrResult.String(ResultPassed), AttrResult.String(ResultWaited), AttrResult.String(ResultBlocked)
	global, user, ip, system := AttrLevel.String("global"), AttrLevel.String("user"), AttrLevel.String("ip"), AttrLevel.String("system")
	param := AttrLevel.String("param")
	counter := func(name, unit string, pts ...metricdata.DataPoint[int64]) metricdata.Metrics {
		return metricdata.Metrics{Name: name, Unit: unit, Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: pts}}
	}
	want := []metricdata.Metrics{
		counter(OTelRequests, "{request}",
			i64(10, orders, passed, global), i64(0, orders, waited, global),
			i64(2, orders, blocked, global), i64(1, orders, blocked, user), i64(1, orders, blocked, ip), i64(0, orders, blocked, system),
			i64(0, orders, blocked, param),
			i64(1, slow, passed, global), i64(2, slow, waited, global),
			i64(0, slow, blocked, global), i64(0, slow, blocked, user), i64(0, slow, blocked, ip), i64(0, slow, blocked, system),
			i64(1, slow, blocked, param),
			i64(0, idle, passed, global), i64(0, idle, waited, global),
			i64(0, idle, blocked, global), i64(0, idle, blocked, user), i64(0, idle, blocked, ip), i64(0, idle, blocked, system),
			i64(0, idle, blocked, param)),
		counter(OTelRequestErrors, "{request}", i64(1, orders), i64(0, slow), i64(0, idle)),
		{Name: OTelActiveRequests, Unit: "{request}", Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality, IsMonotonic: false,
			DataPoints: []metricdata.DataPoint[int64]{i64(1, orders), i64(0, slow), i64(0, idle)}}},
		{Name: OTelRuleLimit, Unit: "{request}", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{
			f64(2, orders, ip, AttrRule.String("orders-ip")),
			f64(3, orders, user, AttrRule.String("orders-user")),
			f64(5, orders, global, AttrRule.String("orders")), // 10 × factor 0.5
			f64(10, slow, global, AttrRule.String("slow")),
			f64(2, slow, global, AttrRule.String("slow-try")),
			f64(5, idle, global, AttrRule.String("idle-tb")),
		}}},
		{Name: OTelAdaptiveFactor, Unit: "1", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{f64(0.5)}}},
		counter(OTelShadowBlocked, "{request}", i64(1, slow, global, AttrRule.String("slow-try"))),
		counter(OTelListRefusals, "{request}", i64(1, slow, param, AttrReason.String(ReasonDenied))),
		{Name: OTelSystemLimit, Unit: "{request}", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{i64(100)}}},
		{Name: OTelCPU, Unit: "1", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{f64(0.75)}}},
		counter(OTelClusterRequests, "{request}",
			i64(0, AttrResult.String("passed")), i64(0, AttrResult.String("blocked")), i64(0, AttrResult.String("error"))),
		counter(OTelClusterFallbacks, "{request}",
			i64(0, AttrPolicy.String("local")), i64(0, AttrPolicy.String("allow")), i64(0, AttrPolicy.String("deny"))),
		{Name: OTelClusterBreaker, Unit: "1", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{i64(1)}}},
		{Name: OTelReloadSuccessful, Unit: "1", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{i64(0)}}},
		{Name: OTelReloadLastSuccess, Unit: "s", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{
			f64(float64(src.reload.LastSuccess.Unix()))}}},
		{Name: OTelAlertsFiring, Unit: "{alert}", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{
			i64(1, AttrAlert.String("FlowgateHighRejectionRatio"), orders)}}},
	}
	for _, w := range want {
		g, ok := got[w.Name]
		if !ok {
			t.Errorf("no instrument %s", w.Name)
			continue
		}
		assertMetric(t, w, g)
	}

	// The histograms come from the producer, in the engine's buckets.
	bounds := eng.Snapshot().Resources[0].RTHist.Bounds
	hist := func(vals []float64, kv ...attribute.KeyValue) metricdata.HistogramDataPoint[float64] {
		counts := make([]uint64, len(bounds)+1)
		var sum float64
		for _, v := range vals {
			i := 0
			for i < len(bounds) && v > bounds[i] {
				i++
			}
			counts[i]++
			sum += v
		}
		return metricdata.HistogramDataPoint[float64]{Attributes: attribute.NewSet(kv...), Count: uint64(len(vals)),
			Bounds: bounds, BucketCounts: counts, Sum: sum}
	}
	for _, w := range []metricdata.Metrics{
		{Name: OTelRequestDuration, Unit: "s", Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality,
			DataPoints: []metricdata.HistogramDataPoint[float64]{hist(tr.ordersRT, orders), hist(tr.slowRT, slow), hist(nil, idle)}}},
		{Name: OTelTimeInQueue, Unit: "s", Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality,
			DataPoints: []metricdata.HistogramDataPoint[float64]{hist(nil, orders), hist(tr.slowWait, slow), hist(nil, idle)}}},
		{Name: OTelClusterDuration, Unit: "s", Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality,
			DataPoints: []metricdata.HistogramDataPoint[float64]{{Attributes: *attribute.EmptySet(), Count: 7,
				Bounds: []float64{0.001, 0.01}, BucketCounts: []uint64{4, 1, 2}, Sum: 0.045}}}},
	} {
		assertMetric(t, w, got[w.Name])
	}

	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	wantNames := []string{OTelActiveRequests, OTelAdaptiveFactor, OTelAlertsFiring, OTelBreakerState, OTelBreakerTransitions, OTelClusterBreaker, OTelClusterFallbacks,
		OTelClusterDuration, OTelClusterRequests, OTelCPU, OTelRequestErrors, OTelRequestDuration, OTelTimeInQueue,
		OTelRequests, OTelReloadLastSuccess, OTelReloadSuccessful, OTelRuleKeys, OTelRuleLimit, OTelRuleWindow, OTelShadowBlocked, OTelSystemLimit,
		OTelListRefusals}
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Errorf("instruments:\n got %v\nwant %v", names, wantNames)
	}

	if err := unregister(); err != nil {
		t.Fatalf("unregister: %v", err)
	}
	after := collectOTel(t, reader)
	if m, ok := after[OTelRequests]; ok && len(m.Data.(metricdata.Sum[int64]).DataPoints) > 0 {
		t.Errorf("after unregister, %s still reports %d points", OTelRequests, len(m.Data.(metricdata.Sum[int64]).DataPoints))
	}
}

func TestOTelDefaultsToGlobalProvider(t *testing.T) {
	eng, _, _ := driveTraffic(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	prev := otel.GetMeterProvider()
	otel.SetMeterProvider(mp)
	t.Cleanup(func() { otel.SetMeterProvider(prev); _ = mp.Shutdown(context.Background()) })

	unregister, err := RegisterOTel(eng, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unregister()
	got := collectOTel(t, reader)
	want := metricdata.Metrics{Name: OTelAdaptiveFactor, Unit: "1",
		Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{f64(0.5)}}}
	assertMetric(t, want, got[OTelAdaptiveFactor])
	for _, optional := range []string{OTelCPU, OTelClusterBreaker, OTelReloadSuccessful, OTelAlertsFiring} {
		if _, ok := got[optional]; ok {
			t.Errorf("%s exported without its source", optional)
		}
	}
}

func TestRegisterOTelNilEngine(t *testing.T) {
	if _, err := RegisterOTel(nil, nil); err == nil {
		t.Error("RegisterOTel(nil, nil): no error")
	}
}

func BenchmarkOTelCollect(b *testing.B) {
	eng, _, _ := driveTraffic(b)
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(NewOTelProducer(eng)))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	unregister, err := RegisterOTel(eng, mp)
	if err != nil {
		b.Fatal(err)
	}
	defer unregister()
	var rm metricdata.ResourceMetrics
	b.ReportAllocs()
	for b.Loop() {
		if err := reader.Collect(context.Background(), &rm); err != nil {
			b.Fatal(err)
		}
	}
}

// A named adaptive source puts what it measures on the CPU gauge.
func TestOTelCPUSource(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	unregister, err := RegisterOTel(flow.NewEngine(), mp, WithAdaptive(namedCPU{0.25}))
	if err != nil {
		t.Fatal(err)
	}
	defer unregister()
	want := metricdata.Metrics{Name: OTelCPU, Unit: "1", Data: metricdata.Gauge[float64]{
		DataPoints: []metricdata.DataPoint[float64]{f64(0.25, AttrCPUSource.String("process"))}}}
	assertMetric(t, want, collectOTel(t, reader)[OTelCPU])
}
