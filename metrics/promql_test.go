package metrics

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// exported returns every series name the collector exports with all its
// sources, after traffic, mapped to its label names. A histogram gives its
// _bucket (with le), _sum and _count series.
func exported(t *testing.T) map[string]map[string]bool {
	t.Helper()
	eng, _, _ := driveTraffic(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(eng, allSources()...))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// The adaptive_concurrency series come from an engine of their own, so
	// the dashboard's queries on them are checked too.
	auto, _ := adaptiveEngine(t)
	areg := prometheus.NewPedanticRegistry()
	areg.MustRegister(NewCollector(auto))
	amfs, err := areg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	mfs = append(mfs, amfs...)
	// The Outbound and Cost rows' series, from an engine of their own.
	oreg := prometheus.NewPedanticRegistry()
	oreg.MustRegister(NewCollector(outboundCostEngine(t)))
	omfs, err := oreg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	mfs = append(mfs, omfs...)
	out := make(map[string]map[string]bool)
	for _, mf := range mfs {
		labels := make(map[string]bool)
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			withLe := maps.Clone(labels)
			withLe["le"] = true
			out[mf.GetName()+"_bucket"] = withLe
			out[mf.GetName()+"_sum"] = labels
			out[mf.GetName()+"_count"] = labels
			continue
		}
		out[mf.GetName()] = labels
	}
	// The token service's series come from cluster/tokenrpc's collector,
	// which imports this package and so cannot be imported here; the
	// integration test against a real Prometheus (prometheus_test.go at
	// the module root) checks that the dashboard's queries of them return
	// data from a running token service.
	for name, labels := range map[string][]string{
		"flowgate_token_server_requests_total":                  {"method", "status"},
		"flowgate_token_server_request_duration_seconds_bucket": {"method", "le"},
		"flowgate_token_server_request_duration_seconds_sum":    {"method"},
		"flowgate_token_server_request_duration_seconds_count":  {"method"},
		"flowgate_token_server_backend_errors_total":            nil,
		"flowgate_token_server_unauthenticated_total":           nil,
		// The Envoy rate limit service's, from cmd/flowgate's collector
		// (serve_envoy.go; its test reads them from a running service).
		"flowgate_envoy_requests_total":        nil,
		"flowgate_envoy_errors_total":          nil,
		"flowgate_envoy_hits_total":            {"domain", "limit", "outcome"},
		"flowgate_envoy_redis_pipelines_total": nil,
		"flowgate_envoy_redis_requests_total":  nil,
		"flowgate_envoy_redis_queued":          nil,
	} {
		out[name] = make(map[string]bool)
		for _, l := range labels {
			out[name][l] = true
		}
	}
	return out
}

// targetLabels are added by Prometheus at scrape time; every query may use them.
var targetLabels = []string{"job", "instance"}

var (
	metricRe   = regexp.MustCompile(`\bflowgate_[a-zA-Z0-9_]+`)
	selectorRe = regexp.MustCompile(`\b(flowgate_[a-zA-Z0-9_]+)\s*\{([^}]*)\}`)
	matcherRe  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	groupingRe = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
)

// checkQuery reports what in a PromQL query would silently select nothing:
// a flowgate_ metric the collector does not export, a label matcher or a
// grouping label that none of the query's metrics carries, or no flowgate_
// metric at all. It is a scan, not a parser: it relies on the queries
// naming metrics in full and putting matchers in braces, as ours do.
func checkQuery(exp map[string]map[string]bool, query string) []string {
	var problems []string
	names := metricRe.FindAllString(query, -1)
	if len(names) == 0 {
		return []string{"uses no flowgate_ metric"}
	}
	known := map[string]bool{}
	for _, l := range targetLabels {
		known[l] = true
	}
	for _, n := range names {
		labels, ok := exp[n]
		if !ok {
			problems = append(problems, fmt.Sprintf("metric %s is not exported", n))
			continue
		}
		for l := range labels {
			known[l] = true
		}
	}
	for _, m := range selectorRe.FindAllStringSubmatch(query, -1) {
		labels := exp[m[1]]
		if labels == nil {
			continue // reported above
		}
		for _, mm := range matcherRe.FindAllStringSubmatch(m[2], -1) {
			if l := mm[1]; !labels[l] && !slices.Contains(targetLabels, l) {
				problems = append(problems, fmt.Sprintf("%s has no label %q", m[1], l))
			}
		}
	}
	for _, g := range groupingRe.FindAllStringSubmatch(query, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !known[l] {
				problems = append(problems, fmt.Sprintf("grouping label %q is on none of its metrics", l))
			}
		}
	}
	return problems
}

func TestCheckQueryCatchesMistakes(t *testing.T) {
	exp := exported(t)
	for _, tc := range []struct {
		query string
		bad   bool
	}{
		{`sum by (resource) (rate(flowgate_requests_total{result="blocked"}[5m]))`, false},
		{`histogram_quantile(0.9, sum by (le) (rate(flowgate_wait_seconds_bucket[5m])))`, false},
		{`rate(flowgate_requests_count[5m])`, true},        // no such metric
		{`flowgate_in_flight{result="passed"}`, true},      // no such label
		{`sum by (user) (flowgate_requests_total)`, true},  // never a user label
		{`rate(flowgate_response_time_seconds[5m])`, true}, // a histogram's base name
		{`up == 0`, true}, // no flowgate metric
		{`sum by (job, instance) (flowgate_adaptive_factor)`, false}, // target labels
	} {
		if got := len(checkQuery(exp, tc.query)) > 0; got != tc.bad {
			t.Errorf("checkQuery(%s): problems %v, want bad=%v", tc.query, checkQuery(exp, tc.query), tc.bad)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
