package metrics_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/flowgate/flowgate/adaptive"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/metrics"
)

// Register the collector on your own registry; each scrape reads one
// snapshot of the engine.
func ExampleNewCollector() {
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	_ = eng.LoadRules([]flow.Rule{{ID: "login", Resource: "POST /login", Algorithm: flow.AlgoFixedWindow, Limit: 2, Window: time.Minute}})
	for range 3 {
		if p, err := eng.Entry("POST /login"); err == nil {
			p.Exit()
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(eng))

	text, _ := testutil.GatherAndFormat(reg, expfmt.TypeTextPlain, metrics.NameRequests, metrics.NameRuleLimit)
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "flowgate_") && !strings.HasSuffix(line, " 0") {
			fmt.Println(line)
		}
	}
	// Output:
	// flowgate_requests_total{level="global",resource="POST /login",result="blocked"} 1
	// flowgate_requests_total{level="global",resource="POST /login",result="passed"} 2
	// flowgate_rule_limit{level="global",resource="POST /login",rule="login"} 2
}

// RegisterOTel observes the engine on a MeterProvider; NewOTelProducer adds
// the histograms to a reader.
func ExampleRegisterOTel() {
	eng := flow.NewEngine()
	_ = eng.LoadRules([]flow.Rule{{ID: "search", Resource: "GET /search", Algorithm: flow.AlgoTokenBucket, Limit: 100, Adaptive: true}})
	eng.SetAdaptiveFactor(0.8)

	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(metrics.NewOTelProducer(eng)))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	unregister, err := metrics.RegisterOTel(eng, mp)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer unregister()

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[float64]:
				if m.Name == metrics.OTelAdaptiveFactor || m.Name == metrics.OTelRuleLimit {
					fmt.Printf("%s = %v %s\n", m.Name, d.DataPoints[0].Value, m.Unit)
				}
			case metricdata.Histogram[float64]:
				if m.Name == metrics.OTelRequestDuration {
					fmt.Printf("%s: %d series, unit %s\n", m.Name, len(d.DataPoints), m.Unit)
				}
			}
		}
	}
	// Output:
	// flowgate.rule.limit = 80 {request}
	// flowgate.adaptive.factor = 0.8 1
	// flowgate.request.duration: 1 series, unit s
}

// fixedCPU is a CPU sampler that always reads the same utilisation.
type fixedCPU float64

func (f fixedCPU) CPU() (float64, error) { return float64(f), nil }

// WithCPU wires the adaptive controller's last CPU sample into
// flowgate_cpu_usage_ratio (NaN, hence no sample, before its first step).
// A rules watcher plugs in the same way:
//
//	metrics.WithReload(metrics.ReloadFunc(func() metrics.ReloadStatus {
//		st := watcher.Status()
//		return metrics.ReloadStatus{Successful: st.OK, LastSuccess: st.LastGoodLoad}
//	}))
func ExampleWithCPU() {
	eng := flow.NewEngine()
	ctrl := adaptive.NewController(eng, adaptive.WithSampler(fixedCPU(0.9)))
	cpu := func() float64 {
		if st := ctrl.State(); st.Samples > 0 {
			return st.Sample
		}
		return math.NaN()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(eng, metrics.WithCPU(cpu)))

	count := func() int { n, _ := testutil.GatherAndCount(reg, metrics.NameCPU); return n }
	fmt.Println("series before the first step:", count())
	_ = ctrl.Step()
	text, _ := testutil.GatherAndFormat(reg, expfmt.TypeTextPlain, metrics.NameCPU)
	fmt.Print(strings.SplitAfter(string(text), "\n")[2])
	// Output:
	// series before the first step: 0
	// flowgate_cpu_usage_ratio 0.9
}
