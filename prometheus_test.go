package flowgate_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowgate/flowgate/adaptive"
	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/cluster/remote"
	"github.com/flowgate/flowgate/cluster/tokenrpc"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/promtest"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/flowgate/flowgate/metrics"
	"github.com/flowgate/flowgate/rules"
)

// promRules is the watched rules document of the program Prometheus
// scrapes: a resource refused most of the time (the rejection alert), a
// user-level rule (tracked keys) with a shadow rule behind it that would
// refuse part of what it admits (the "would have blocked" panels), a queue
// (waits), a cluster rule (the token service over Redis), adaptive rules,
// an adaptive_concurrency rule, a circuit breaker on a dependency that
// always fails (open, then failing probes), a deny list refusing one call
// in five of its resource, outgoing-call guards on a backend that refuses
// half the calls, a token bucket whose calls settle their actual cost;
// alerting and adaptive sections
// short enough to act within the test.
const promRules = `{
  "rules": [
    {"id": "hot", "resource": "GET /hot", "algorithm": "fixed_window", "limit": 10, "adaptive": true},
    {"id": "orders-per-user", "resource": "GET /orders", "level": "user", "algorithm": "token_bucket", "limit": 5},
    {"id": "orders-try", "resource": "GET /orders", "algorithm": "sliding_window", "limit": 20, "shadow": true},
    {"id": "pay-queue", "resource": "POST /pay", "algorithm": "leaky_bucket", "limit": 20, "maxWait": "200ms"},
    {"id": "shared", "resource": "GET /shared", "algorithm": "token_bucket", "limit": 20, "adaptive": true,
     "cluster": {"threshold": "global", "fallback": "local"}},
    {"id": "dep-breaker", "resource": "GET /dep", "algorithm": "circuit_breaker", "strategy": "error_ratio",
     "threshold": 0.5, "openFor": "1s"},
    {"id": "auto", "resource": "GET /auto", "algorithm": "adaptive_concurrency"},
    {"id": "blocked-origins", "resource": "GET /lists", "level": "param", "param": "origin", "algorithm": "deny",
     "values": ["scraper"]},
    {"id": "backend-throttle", "resource": "GET backend", "algorithm": "client_throttle", "window": "10s"},
    {"id": "backend-retries", "resource": "GET backend", "algorithm": "retry_budget"},
    {"id": "llm-tokens", "resource": "POST /llm", "algorithm": "token_bucket", "limit": 1000}
  ],
  "adaptive": {"period": "100ms"},
  "alerting": {"rejectionRatio": 0.3, "window": "2s", "for": "1s", "interval": "250ms", "minRequests": 10}
}`

// TestPrometheusEvaluatesDashboardAndAlerts runs a program that exports
// every source (engine, adaptive controller, rules watcher, alerter, a
// cluster client of a token service over a real redis-server, and the
// token service itself) to a real Prometheus, then breaks Redis and the
// rules file. Every expression of the Grafana dashboard and every alert
// rule, evaluated by Prometheus over the run, must be accepted and return
// numbers, and every alert must reach firing. The alert rules run with
// their windows and "for" shortened (5m -> 10s, for -> 3s); the
// expressions are otherwise the shipped ones.
func TestPrometheusEvaluatesDashboardAndAlerts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 40 s of real time against prometheus and redis-server")
	}
	rdbSrv := redistest.Start(t)

	// The token service, as `flowgate serve` runs it, with its own /metrics.
	rdb := rdbSrv.Client()
	ts, err := cluster.NewRedisTokenServer(rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	tsrv, err := tokenrpc.NewServer(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go tsrv.Serve(grpcLis)
	defer tsrv.Stop()
	tsReg := prometheus.NewRegistry()
	tsReg.MustRegister(tsrv.Collector())
	tsMetrics := serveMetrics(t, tsReg)

	// The service: an engine deciding "shared" through the token service.
	rc, err := remote.New([]string{grpcLis.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	eng := flow.NewEngine(flow.WithTokenServer(rc))
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.json")
	if err := os.WriteFile(path, []byte(promRules), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := rules.Watch(ctx, path, eng)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	alertOpts, err := w.Document().AlertingSection().Options()
	if err != nil {
		t.Fatal(err)
	}
	al := alerting.New(eng, alertOpts...)
	al.Start()
	defer al.Close()
	ctl := adaptive.NewController(eng, adaptive.WithConfig(w.Document().AdaptiveConfig()),
		adaptive.WithSystemGuard(0.99))
	if err := ctl.Err(); err != nil {
		t.Fatal(err)
	}
	ctl.Start()
	defer ctl.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(eng,
		metrics.WithAdaptive(ctl),
		metrics.WithCluster(rc),
		metrics.WithAlerts(al),
		metrics.WithReload(metrics.ReloadFunc(func() metrics.ReloadStatus {
			st := w.Status()
			return metrics.ReloadStatus{Successful: st.OK, LastSuccess: st.LastGoodLoad}
		})),
	))
	appMetrics := serveMetrics(t, reg)

	alertFile := shortenAlertRules(t)
	prom := promtest.Start(t, promtest.Config{
		Targets:   []string{appMetrics, tsMetrics},
		Interval:  time.Second,
		RuleFiles: map[string]string{"flowgate.rules.yml": alertFile},
	})
	start := time.Now()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	drive(eng, stop, &wg)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	// Phase 1: Redis up, good rules: the rejection alert fires, and the
	// breaker on the failing dependency stays open or probing.
	waitFiring(t, prom, "FlowgateHighRejectionRatio", 40*time.Second)
	waitFiring(t, prom, "FlowgateCircuitBreakerOpen", 40*time.Second)
	// Phase 2: Redis gone (the client falls back to its local limiter) and
	// the rules file broken (the watcher keeps the last good rules).
	rdbSrv.Kill()
	if err := os.WriteFile(path, []byte(`{"rules": [{"id": "hot"`), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFiring(t, prom, "FlowgateClusterFallbackActive", 40*time.Second)
	waitFiring(t, prom, "FlowgateRulesReloadFailing", 40*time.Second)
	close(stop)
	wg.Wait()
	time.Sleep(2 * time.Second) // one more scrape of the final counts (an external process's schedule)
	end := time.Now()

	qctx, qcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer qcancel()
	health, err := prom.RuleHealth(qctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range health {
		if h != "ok" {
			t.Errorf("alert rule %s: health %q", name, h)
		}
	}
	exprs := dashboardExprs(t)
	for name, r := range alertExprs(t, alertFile) {
		exprs["alert "+name] = r
	}
	if len(exprs) < 25 {
		t.Fatalf("only %d expressions found", len(exprs))
	}
	for name, expr := range exprs {
		if strings.HasPrefix(name, "panel Envoy") {
			// From `flowgate serve --envoy` (cmd/flowgate), which this
			// program does not run: metrics/promql_test checks the names
			// and labels, serve_envoy_test reads them from the service.
			continue
		}
		res, err := prom.QueryRange(qctx, expr, start, end, time.Second)
		if err != nil {
			t.Errorf("%s: Prometheus refused it: %v\n\t%s", name, err, expr)
			continue
		}
		if !promtest.HasNumber(res) {
			t.Errorf("%s: no data over the run\n\t%s", name, expr)
		}
	}
	t.Logf("%d expressions evaluated over %v", len(exprs), end.Sub(start).Round(time.Second))
}

// serveMetrics serves reg's /metrics on a loopback port for the test's
// length and returns its host:port.
func serveMetrics(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })
	return lis.Addr().String()
}

// drive sends traffic until stop is closed: every 20 ms a call to each
// resource (pay runs on its own, as each call may queue).
func drive(eng *flow.Engine, stop <-chan struct{}, wg *sync.WaitGroup) {
	call := func(res string, opts ...flow.EntryOption) {
		p, err := eng.Entry(res, opts...)
		if err != nil {
			return
		}
		p.Exit()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		users := []string{"u-1", "u-2", "u-3", "u-4", "u-5", "u-6"}
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			call("GET /hot")
			call("GET /shared")
			call("GET /auto")
			if n%5 == 0 {
				call("GET /lists", flow.WithParam("origin", "scraper"))
			} else {
				call("GET /lists", flow.WithParam("origin", "web"))
			}
			if p, err := eng.Entry("GET /dep"); err == nil {
				p.Exit(flow.WithError(context.DeadlineExceeded)) // the dependency is down
			}
			outboundCall(eng, n)
			if p, err := eng.Entry("POST /llm", flow.WithTokens(10)); err == nil {
				p.Exit(flow.WithActualCost(5 + 10*(n%3))) // estimates off both ways
			}
			if p, err := eng.Entry("GET /orders", flow.WithUser(users[n%len(users)])); err == nil {
				if n%10 == 0 {
					p.Exit(flow.WithError(context.DeadlineExceeded))
				} else {
					p.Exit()
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			call("POST /pay", flow.WithContext(context.Background()))
			time.Sleep(10 * time.Millisecond) // arrivals at about twice the queue's rate
		}
	}()
}

// outboundCall makes an outgoing call through the guards of "GET backend":
// the backend answers every other first attempt as overloaded, so the
// throttle refuses some calls and the budget passes retries.
func outboundCall(eng *flow.Engine, n int) {
	try := 0
	eng.Retry(context.Background(), "GET backend", flow.RetryPolicy{Attempts: 2, BaseDelay: time.Millisecond},
		func(context.Context) error {
			try++
			if n%2 == 0 && try == 1 {
				return &flow.RetryableError{Err: flow.ErrOverloaded}
			}
			return nil
		})
}

// waitFiring waits until Prometheus fires the alert name.
func waitFiring(t *testing.T, prom *promtest.Server, name string, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	a, err := prom.WaitFiring(ctx, name)
	if err != nil {
		t.Fatalf("%v; prometheus log:\n%s", err, prom.Log())
	}
	t.Logf("%s firing (%v)", name, a.Labels)
}

// shortenAlertRules returns the shipped alert rules with 5m windows as 10s
// and every "for" as 3s, so they can fire within a test.
func shortenAlertRules(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("metrics/alerts/flowgate.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "[5m]", "[10s]")
	s = regexp.MustCompile(`(?m)^(\s+for:) \S+$`).ReplaceAllString(s, "$1 3s")
	if s == string(b) || !strings.Contains(s, "for: 3s") {
		t.Fatal("alert rules: nothing shortened; has the file's layout changed?")
	}
	return s
}

// alertExprs returns each alert's expression from the rule file text.
func alertExprs(t *testing.T, file string) map[string]string {
	t.Helper()
	// The file is YAML; its expressions are block scalars ("expr: |"),
	// read here without a YAML dependency.
	out := map[string]string{}
	var name string
	lines := strings.Split(file, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if n, ok := strings.CutPrefix(l, "- alert: "); ok {
			name = n
			continue
		}
		if l != "expr: |" || name == "" {
			continue
		}
		indent := -1
		var body []string
		for i++; i < len(lines); i++ {
			ln := lines[i]
			lead := len(ln) - len(strings.TrimLeft(ln, " "))
			if strings.TrimSpace(ln) != "" && indent < 0 {
				indent = lead
			}
			if strings.TrimSpace(ln) != "" && lead < indent {
				i--
				break
			}
			body = append(body, strings.TrimSpace(ln))
		}
		out[name] = strings.Join(body, " ")
	}
	if len(out) < 4 {
		t.Fatalf("found %d alert expressions, want every one of the file's 4", len(out))
	}
	return out
}

// dashboardExprs returns every query of the dashboard, its variables
// filled as Grafana would for "all jobs, all resources":
// label_values(m, l) becomes group by (l) (m).
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("metrics/dashboards/flowgate.json")
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string
		Targets []struct{ RefID, Expr string }
		Panels  json.RawMessage
	}
	var d struct {
		Panels     []panel
		Templating struct {
			List []struct {
				Name  string
				Query json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer(`$job`, `flowgate`, `$resource`, `.*`, `$__rate_interval`, `5s`)
	out := map[string]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out["panel "+p.Title+" "+tg.RefID] = fill.Replace(tg.Expr)
		}
	}
	lv := regexp.MustCompile(`^label_values\((.*), *(\w+)\)$`)
	for _, v := range d.Templating.List {
		var q struct{ Query string }
		if json.Unmarshal(v.Query, &q) != nil || q.Query == "" {
			continue
		}
		m := lv.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, q.Query)
			continue
		}
		out["variable "+v.Name] = fill.Replace("group by (" + m[2] + ") (" + m[1] + ")")
	}
	return out
}
