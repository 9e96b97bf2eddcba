package metrics

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flowgate/flowgate/flow"
)

// wantRequests is flowgate_requests_total for driveTraffic, worked out from
// its rules: every level × result series exists, idle's at 0.
const wantRequests = `
# HELP flowgate_requests_total Calls to Entry by outcome: passed at once, passed after waiting, or blocked at the named level. The three results partition the calls.
# TYPE flowgate_requests_total counter
flowgate_requests_total{level="global",resource="GET /orders",result="passed"} 10
flowgate_requests_total{level="global",resource="GET /orders",result="waited"} 0
flowgate_requests_total{level="global",resource="GET /orders",result="blocked"} 2
flowgate_requests_total{level="user",resource="GET /orders",result="blocked"} 1
flowgate_requests_total{level="ip",resource="GET /orders",result="blocked"} 1
flowgate_requests_total{level="system",resource="GET /orders",result="blocked"} 0
flowgate_requests_total{level="param",resource="GET /orders",result="blocked"} 0
flowgate_requests_total{level="global",resource="GET /slow",result="passed"} 1
flowgate_requests_total{level="global",resource="GET /slow",result="waited"} 2
flowgate_requests_total{level="global",resource="GET /slow",result="blocked"} 0
flowgate_requests_total{level="user",resource="GET /slow",result="blocked"} 0
flowgate_requests_total{level="ip",resource="GET /slow",result="blocked"} 0
flowgate_requests_total{level="system",resource="GET /slow",result="blocked"} 0
flowgate_requests_total{level="param",resource="GET /slow",result="blocked"} 1
flowgate_requests_total{level="global",resource="idle",result="passed"} 0
flowgate_requests_total{level="global",resource="idle",result="waited"} 0
flowgate_requests_total{level="global",resource="idle",result="blocked"} 0
flowgate_requests_total{level="user",resource="idle",result="blocked"} 0
flowgate_requests_total{level="ip",resource="idle",result="blocked"} 0
flowgate_requests_total{level="system",resource="idle",result="blocked"} 0
flowgate_requests_total{level="param",resource="idle",result="blocked"} 0
`

const wantGauges = `
# HELP flowgate_in_flight Calls admitted and not yet exited.
# TYPE flowgate_in_flight gauge
flowgate_in_flight{resource="GET /orders"} 1
flowgate_in_flight{resource="GET /slow"} 0
flowgate_in_flight{resource="idle"} 0
# HELP flowgate_request_errors_total Admitted calls that exited with an error.
# TYPE flowgate_request_errors_total counter
flowgate_request_errors_total{resource="GET /orders"} 1
flowgate_request_errors_total{resource="GET /slow"} 0
flowgate_request_errors_total{resource="idle"} 0
# HELP flowgate_adaptive_factor Scale applied to the limits of adaptive rules: below 1 while the CPU controller cuts, above 1 while its idle-CPU boost is up; 1 when no controller runs.
# TYPE flowgate_adaptive_factor gauge
flowgate_adaptive_factor 0.5
# HELP flowgate_system_max_in_flight In-flight calls above which the system guard blocks every call; 0 when it is off.
# TYPE flowgate_system_max_in_flight gauge
flowgate_system_max_in_flight 100
`

// The adaptive global rule shows half its limit after SetAdaptiveFactor(0.5).
const wantRules = `
# HELP flowgate_rule_limit Effective limit of a rule now, after the adaptive factor: permits per window, or calls in flight for concurrency rules.
# TYPE flowgate_rule_limit gauge
flowgate_rule_limit{level="ip",resource="GET /orders",rule="orders-ip"} 2
flowgate_rule_limit{level="user",resource="GET /orders",rule="orders-user"} 3
flowgate_rule_limit{level="global",resource="GET /orders",rule="orders"} 5
flowgate_rule_limit{level="global",resource="GET /slow",rule="slow"} 10
flowgate_rule_limit{level="global",resource="GET /slow",rule="slow-try"} 2
flowgate_rule_limit{level="global",resource="idle",rule="idle-tb"} 5
# HELP flowgate_rule_window_seconds Window a rule's limit is counted over.
# TYPE flowgate_rule_window_seconds gauge
flowgate_rule_window_seconds{level="ip",resource="GET /orders",rule="orders-ip"} 60
flowgate_rule_window_seconds{level="user",resource="GET /orders",rule="orders-user"} 60
flowgate_rule_window_seconds{level="global",resource="GET /orders",rule="orders"} 60
flowgate_rule_window_seconds{level="global",resource="GET /slow",rule="slow"} 1
flowgate_rule_window_seconds{level="global",resource="GET /slow",rule="slow-try"} 60
flowgate_rule_window_seconds{level="global",resource="idle",rule="idle-tb"} 1
flowgate_rule_window_seconds{level="global",resource="idle",rule="idle-breaker"} 1
# HELP flowgate_rule_keys Users or IPs a rule tracks now (0 for global rules).
# TYPE flowgate_rule_keys gauge
flowgate_rule_keys{level="ip",resource="GET /orders",rule="orders-ip"} 2
flowgate_rule_keys{level="user",resource="GET /orders",rule="orders-user"} 1
flowgate_rule_keys{level="global",resource="GET /orders",rule="orders"} 0
flowgate_rule_keys{level="global",resource="GET /slow",rule="slow"} 0
flowgate_rule_keys{level="global",resource="GET /slow",rule="slow-try"} 0
flowgate_rule_keys{level="global",resource="idle",rule="idle-tb"} 0
flowgate_rule_keys{level="global",resource="idle",rule="idle-breaker"} 0
flowgate_rule_keys{level="param",resource="GET /slow",rule="slow-origins"} 0
# HELP flowgate_rule_info Constant 1 for each rule in force, labelled with its algorithm and modes.
# TYPE flowgate_rule_info gauge
flowgate_rule_info{adaptive="false",algorithm="fixed_window",cluster="false",level="ip",resource="GET /orders",rule="orders-ip"} 1
flowgate_rule_info{adaptive="false",algorithm="fixed_window",cluster="false",level="user",resource="GET /orders",rule="orders-user"} 1
flowgate_rule_info{adaptive="true",algorithm="fixed_window",cluster="false",level="global",resource="GET /orders",rule="orders"} 1
flowgate_rule_info{adaptive="false",algorithm="leaky_bucket",cluster="false",level="global",resource="GET /slow",rule="slow"} 1
flowgate_rule_info{adaptive="false",algorithm="fixed_window",cluster="false",level="global",resource="GET /slow",rule="slow-try"} 1
flowgate_rule_info{adaptive="false",algorithm="token_bucket",cluster="false",level="global",resource="idle",rule="idle-tb"} 1
flowgate_rule_info{adaptive="false",algorithm="circuit_breaker",cluster="false",level="global",resource="idle",rule="idle-breaker"} 1
flowgate_rule_info{adaptive="false",algorithm="deny",cluster="false",level="param",resource="GET /slow",rule="slow-origins"} 1
`

// The deny list's one refusal, and its series from the start.
const wantLists = `
# HELP flowgate_list_refusals_total Calls refused by allow and deny rules, by level (ip, user, param) and reason (denied: on a deny list; not_allowed: not on an allow list). They are also counted in flowgate_requests_total as blocked at that level.
# TYPE flowgate_list_refusals_total counter
flowgate_list_refusals_total{level="param",reason="denied",resource="GET /slow"} 1
`

// The shadow rule on GET /slow would have refused one call (driveTraffic).
const wantShadow = `
# HELP flowgate_shadow_blocked_total Calls a rule in shadow would have refused; they were let through.
# TYPE flowgate_shadow_blocked_total counter
flowgate_shadow_blocked_total{level="global",resource="GET /slow",rule="slow-try"} 1
`

// No token server: every cluster series is there, at 0.
const wantCluster = `
# HELP flowgate_cluster_requests_total Requests to the cluster token server by answer: passed, blocked or error.
# TYPE flowgate_cluster_requests_total counter
flowgate_cluster_requests_total{result="passed"} 0
flowgate_cluster_requests_total{result="blocked"} 0
flowgate_cluster_requests_total{result="error"} 0
# HELP flowgate_cluster_fallbacks_total Cluster decisions taken by a rule's fallback policy because the token server could not answer.
# TYPE flowgate_cluster_fallbacks_total counter
flowgate_cluster_fallbacks_total{policy="local"} 0
flowgate_cluster_fallbacks_total{policy="allow"} 0
flowgate_cluster_fallbacks_total{policy="deny"} 0
`

func TestCollectorValues(t *testing.T) {
	eng, _, tr := driveTraffic(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(eng))

	for _, tc := range []struct {
		name, want string
		metrics    []string
	}{
		{"requests", wantRequests, []string{NameRequests}},
		{"gauges", wantGauges, []string{NameInFlight, NameRequestErrors, NameAdaptiveFactor, NameSystemMaxInFlight}},
		{"rules", wantRules, []string{NameRuleLimit, NameRuleWindow, NameRuleKeys, NameRuleInfo}},
		{"cluster", wantCluster, []string{NameClusterRequests, NameClusterFallbacks}},
		{"shadow", wantShadow, []string{NameShadowBlocked}},
		{"lists", wantLists, []string{NameListRefusals}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want), tc.metrics...); err != nil {
				t.Error(err)
			}
		})
	}

	bounds := eng.Snapshot().Resources[0].RTHist.Bounds
	hists := histText(NameResponseTime, "Time from admission to Exit of admitted calls.", bounds, map[string][]float64{
		"GET /orders": tr.ordersRT, "GET /slow": tr.slowRT, "idle": nil,
	}) + histText(NameWait, "Time calls that queued (rules with MaxWait) waited before passing.", bounds, map[string][]float64{
		"GET /orders": nil, "GET /slow": tr.slowWait, "idle": nil,
	})
	if err := testutil.GatherAndCompare(reg, strings.NewReader(hists), NameResponseTime, NameWait); err != nil {
		t.Error(err)
	}

	// Only the metrics above: the optional ones need their sources.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	want := []string{NameAdaptiveFactor, NameBreakerState, NameBreakerTransitions, NameClusterFallbacks, NameClusterRequests, NameInFlight,
		NameListRefusals, NameRequestErrors,
		NameRequests, NameResponseTime, NameRuleInfo, NameRuleKeys, NameRuleLimit, NameRuleWindow,
		NameShadowBlocked, NameSystemMaxInFlight, NameWait}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("families:\n got %v\nwant %v", names, want)
	}
}

// histText writes the exposition of one histogram per resource from the
// values observed: each bucket counts the values <= its bound.
func histText(name, help string, bounds []float64, obs map[string][]float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	for _, res := range slices.Sorted(mapsKeys(obs)) {
		vals := obs[res]
		for _, le := range bounds {
			n := 0
			for _, v := range vals {
				if v <= le {
					n++
				}
			}
			fmt.Fprintf(&b, "%s_bucket{resource=%q,le=%q} %d\n", name, res, fmt.Sprint(le), n)
		}
		var sum float64
		for _, v := range vals {
			sum += v
		}
		fmt.Fprintf(&b, "%s_bucket{resource=%q,le=\"+Inf\"} %d\n", name, res, len(vals))
		fmt.Fprintf(&b, "%s_sum{resource=%q} %v\n", name, res, sum)
		fmt.Fprintf(&b, "%s_count{resource=%q} %d\n", name, res, len(vals))
	}
	return b.String()
}

func mapsKeys(m map[string][]float64) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestCollectorLint(t *testing.T) {
	eng, _, _ := driveTraffic(t)
	c := NewCollector(eng, allSources()...)
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	// The pedantic registry checks Describe against Collect.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("pedantic Gather: %v", err)
	}
}

// fakeSources are the optional sources with values a test can change.
type fakeSources struct {
	cpu     float64
	cluster ClusterMetrics
	reload  ReloadStatus
	firing  []FiringAlert
}

func (f *fakeSources) options() []Option {
	return []Option{
		WithCPU(func() float64 { return f.cpu }),
		WithCluster(ClusterFunc(func() ClusterMetrics { return f.cluster })),
		WithReload(ReloadFunc(func() ReloadStatus { return f.reload })),
		WithAlerts(AlertFunc(func() []FiringAlert { return f.firing })),
	}
}

func newFakeSources() *fakeSources {
	return &fakeSources{
		cpu: 0.75,
		cluster: ClusterMetrics{
			Duration:    flow.Histogram{Bounds: []float64{0.001, 0.01}, Counts: []uint64{4, 1, 2}},
			DurationSum: 45 * time.Millisecond,
			BreakerOpen: true,
		},
		reload: ReloadStatus{Successful: false, LastSuccess: t0.Add(90 * time.Second)},
		firing: []FiringAlert{{Alert: "FlowgateHighRejectionRatio", Resource: "GET /orders"}},
	}
}

func allSources() []Option { return newFakeSources().options() }

func TestCollectorOptionalSources(t *testing.T) {
	eng, _, _ := driveTraffic(t)
	src := newFakeSources()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(eng, src.options()...))

	want := fmt.Sprintf(`
# HELP flowgate_cpu_usage_ratio CPU utilisation of the CPU this process may use, as the adaptive controller last sampled it.
# TYPE flowgate_cpu_usage_ratio gauge
flowgate_cpu_usage_ratio 0.75
# HELP flowgate_cluster_request_duration_seconds Latency of requests to the cluster token server.
# TYPE flowgate_cluster_request_duration_seconds histogram
flowgate_cluster_request_duration_seconds_bucket{le="0.001"} 4
flowgate_cluster_request_duration_seconds_bucket{le="0.01"} 5
flowgate_cluster_request_duration_seconds_bucket{le="+Inf"} 7
flowgate_cluster_request_duration_seconds_sum 0.045
flowgate_cluster_request_duration_seconds_count 7
# HELP flowgate_cluster_breaker_open 1 while the circuit breaker in front of the token server is open, else 0.
# TYPE flowgate_cluster_breaker_open gauge
flowgate_cluster_breaker_open 1
# HELP flowgate_rules_last_reload_successful 1 if the last rule reload succeeded, 0 if it failed and the previous rules are kept.
# TYPE flowgate_rules_last_reload_successful gauge
flowgate_rules_last_reload_successful 0
# HELP flowgate_rules_last_reload_success_timestamp_seconds Unix time of the last successful rule reload; 0 if none.
# TYPE flowgate_rules_last_reload_success_timestamp_seconds gauge
flowgate_rules_last_reload_success_timestamp_seconds %d
# HELP flowgate_alerts_firing 1 while a flowgate alert fires, 0 after it resolved.
# TYPE flowgate_alerts_firing gauge
flowgate_alerts_firing{alert="FlowgateHighRejectionRatio",resource="GET /orders"} 1
`, t0.Add(90*time.Second).Unix())
	names := []string{NameCPU, NameClusterDuration, NameClusterBreaker, NameReloadSuccessful, NameReloadTimestamp, NameAlertsFiring}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	// The alert resolves and another fires: the first reads 0, not absent.
	// The CPU is unknown (NaN): the sample is left out rather than made up.
	src.firing = []FiringAlert{{Alert: "FlowgateHighRejectionRatio", Resource: ""}}
	src.cpu = math.NaN()
	want = `
# HELP flowgate_alerts_firing 1 while a flowgate alert fires, 0 after it resolved.
# TYPE flowgate_alerts_firing gauge
flowgate_alerts_firing{alert="FlowgateHighRejectionRatio",resource=""} 1
flowgate_alerts_firing{alert="FlowgateHighRejectionRatio",resource="GET /orders"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameAlertsFiring, NameCPU); err != nil {
		t.Error(err)
	}
}

// A waited call caught between the engine's two counter updates is read
// once as passed, then as waited: the exported passed counter must not dip.
func TestPassedNeverDecreases(t *testing.T) {
	var g passedGuard
	steps := []struct{ passed, want uint64 }{ // ResourceStats.Passed, as read
		{8, 8},
		{9, 9},   // a waited call read as passed: it is not in Waited yet
		{8, 9},   // now in Waited: 8 would be a counter reset
		{9, 9},   // a call that passed at once
		{10, 10}, // and another
	}
	for i, s := range steps {
		if got := g.passed("r", s.passed); got != s.want {
			t.Errorf("step %d: passed(%d) = %d, want %d", i, s.passed, got, s.want)
		}
	}
}

// Rule ids are optional: rules without one get their place as the label, so
// their series stay distinct.
func TestRulesWithoutIDs(t *testing.T) {
	eng := flow.NewEngine()
	if err := eng.LoadRules([]flow.Rule{
		{ID: "named", Resource: "r", Algorithm: flow.AlgoTokenBucket, Limit: 5},
		{Resource: "r", Algorithm: flow.AlgoFixedWindow, Limit: 7},
		{Resource: "r", Algorithm: flow.AlgoConcurrency, Limit: 3},
	}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(eng))
	want := `
# HELP flowgate_rule_limit Effective limit of a rule now, after the adaptive factor: permits per window, or calls in flight for concurrency rules.
# TYPE flowgate_rule_limit gauge
flowgate_rule_limit{level="global",resource="r",rule="named"} 5
flowgate_rule_limit{level="global",resource="r",rule="rules[1]"} 7
flowgate_rule_limit{level="global",resource="r",rule="rules[2]"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameRuleLimit); err != nil {
		t.Error(err)
	}
}

func TestNewCollectorNilEngine(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewCollector(nil) did not panic")
		}
	}()
	NewCollector(nil)
}

func BenchmarkCollect(b *testing.B) {
	b.Run("scenario", func(b *testing.B) {
		eng, _, _ := driveTraffic(b)
		benchCollect(b, NewCollector(eng, allSources()...))
	})
	b.Run("resources=100", func(b *testing.B) {
		eng := flow.NewEngine()
		var rules []flow.Rule
		for i := range 100 {
			rules = append(rules, flow.Rule{ID: fmt.Sprint("r", i), Resource: fmt.Sprint("GET /r", i),
				Algorithm: flow.AlgoTokenBucket, Limit: 100})
		}
		if err := eng.LoadRules(rules); err != nil {
			b.Fatal(err)
		}
		benchCollect(b, NewCollector(eng))
	})
}

func benchCollect(b *testing.B, c prometheus.Collector) {
	ch := make(chan prometheus.Metric, 4096)
	b.ReportAllocs()
	for b.Loop() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
}
