package metrics

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flowgate/flowgate/flow"
)

func TestIdleResources(t *testing.T) {
	bounds := []float64{0.1, 1}
	s := flow.Snapshot{
		Resources: []flow.ResourceStats{
			{Resource: "a", RTHist: flow.Histogram{Bounds: bounds}, WaitHist: flow.Histogram{Bounds: bounds}},
			{Resource: "c"},
		},
		Rules: []flow.RuleStats{{Resource: "d"}, {Resource: "a"}, {Resource: "b"}, {Resource: "d"}, {Resource: "c"}},
	}
	if got, want := idleResources(&s), []string{"b", "d"}; !slices.Equal(got, want) {
		t.Errorf("idleResources = %v, want %v", got, want)
	}
	z := zeroStats("b", &s)
	if z.Resource != "b" || !slices.Equal(z.RTHist.Bounds, bounds) || !slices.Equal(z.WaitHist.Bounds, bounds) || z.Passed != 0 {
		t.Errorf("zeroStats = %+v, want b with the shared bounds", z)
	}
}

func TestLabelKeysKeepsUnknown(t *testing.T) {
	want := []string{"local", "allow", "deny"}
	if got := labelKeys(want, nil); !slices.Equal(got, want) {
		t.Errorf("nil map: %v", got)
	}
	got := labelKeys(want, map[string]uint64{"allow": 1, "zzz": 2, "aaa": 3})
	if w := []string{"local", "allow", "deny", "aaa", "zzz"}; !slices.Equal(got, w) {
		t.Errorf("labelKeys = %v, want %v", got, w)
	}
	if !slices.Equal(want, []string{"local", "allow", "deny"}) {
		t.Errorf("labelKeys changed its input: %v", want)
	}
}

func TestCumulative(t *testing.T) {
	for _, tc := range []struct {
		name  string
		h     flow.Histogram
		count uint64
		want  map[float64]uint64
	}{
		{"per bucket to cumulative", flow.Histogram{Bounds: []float64{1, 2, 4}, Counts: []uint64{3, 0, 2, 5}}, 10,
			map[float64]uint64{1: 3, 2: 3, 4: 5}},
		{"empty", flow.Histogram{}, 0, map[float64]uint64{}},
		{"short counts", flow.Histogram{Bounds: []float64{1, 2}, Counts: []uint64{4}}, 4, map[float64]uint64{1: 4, 2: 4}},
	} {
		count, got := cumulative(tc.h)
		if count != tc.count || !maps.Equal(got, tc.want) {
			t.Errorf("%s: cumulative = %d %v, want %d %v", tc.name, count, got, tc.count, tc.want)
		}
	}
}

type cpuSource float64

func (c cpuSource) CPU() float64 { return float64(c) }

func TestOptions(t *testing.T) {
	eng, _, _ := driveTraffic(t)
	count := func(opts ...Option) map[string]int {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(NewCollector(eng, opts...))
		out := map[string]int{}
		for _, n := range []string{NameResponseTime, NameWait, NameCPU, NameRequests} {
			c, err := testutil.GatherAndCount(reg, n)
			if err != nil {
				t.Fatal(err)
			}
			out[n] = c
		}
		return out
	}
	if got := count(WithHistograms(false)); got[NameResponseTime] != 0 || got[NameWait] != 0 || got[NameRequests] != 21 {
		t.Errorf("WithHistograms(false): %v, want no histograms and the 21 request series", got)
	}
	if got := count(); got[NameResponseTime] != 3 || got[NameWait] != 3 || got[NameCPU] != 0 {
		t.Errorf("defaults: %v, want a histogram per resource and no CPU", got)
	}
	if got := count(WithAdaptive(cpuSource(0.3))); got[NameCPU] != 1 {
		t.Errorf("WithAdaptive: %v, want the CPU gauge", got)
	}
	if got := count(WithAdaptive(nil), nil); got[NameCPU] != 0 {
		t.Errorf("WithAdaptive(nil): %v, want no CPU gauge", got)
	}
}

// A label value Prometheus cannot carry never reaches a scrape: the engine
// refuses a rule whose resource is not UTF-8 when it is loaded, naming it.
func TestInvalidLabelValueIsRefusedAtLoad(t *testing.T) {
	eng := flow.NewEngine()
	err := eng.LoadRules([]flow.Rule{{ID: "bad", Resource: "GET /\xff", Algorithm: flow.AlgoTokenBucket, Limit: 5}})
	if err == nil || !strings.Contains(err.Error(), "resource") {
		t.Fatalf("LoadRules of a non-UTF-8 resource: %v, want an error naming the resource", err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(eng))
	if _, err := reg.Gather(); err != nil {
		t.Errorf("Gather after the refused load: %v", err)
	}
}

type namedCPU struct{ cpuSource }

func (namedCPU) CPUSourceName() string { return "process" }

// An adaptive source that names what it measures gets it exported.
func TestCPUSourceInfo(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(flow.NewEngine(), WithAdaptive(namedCPU{0.4})))
	want := `# HELP flowgate_cpu_source_info Constant 1, labelled with what the adaptive controller's CPU samples measure: cgroup, process, host or custom.
# TYPE flowgate_cpu_source_info gauge
flowgate_cpu_source_info{source="process"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameCPUSource); err != nil {
		t.Error(err)
	}
	reg = prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(flow.NewEngine(), WithAdaptive(cpuSource(0.4))))
	if n, _ := testutil.GatherAndCount(reg, NameCPUSource); n != 0 {
		t.Errorf("a source without a name exported %d %s series", n, NameCPUSource)
	}
}
