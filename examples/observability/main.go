// Command observability shows flowgate's metrics and its rejection-ratio
// alert together: a real flow.Engine takes load, metrics.NewCollector
// exports it on /metrics (with the alerter as its alert source), and an
// alerting.Alerter fires when half the calls to one resource are refused,
// then resolves when the load falls back.
//
// By default it runs on virtual time: two minutes of traffic take well under
// a second, the alert is printed as it fires and resolves (by a SinkFunc and,
// as Alertmanager's webhook v4 JSON, by a webhook sink posting to the
// program's own /hook), /metrics is scraped once while it fires, and the
// program exits 0. With -serve it runs on real time and keeps serving
// /metrics for Prometheus and Grafana (see README.md and examples/grafana).
//
//	go run ./examples/observability
//	go run ./examples/observability -serve -addr 127.0.0.1:2112
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/metrics"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address of /metrics (default: a free loopback port)")
	serve := flag.Bool("serve", false, "run on real time and serve /metrics until interrupted (or -duration)")
	duration := flag.Duration("duration", 0, "with -serve: stop after this long (0: until interrupted)")
	flag.Parse()
	var err error
	if *serve {
		err = runServe(os.Stdout, *addr, *duration)
	} else {
		err = runDemo(os.Stdout, *addr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "observability:", err)
		os.Exit(1)
	}
}

// The service: GET /orders is limited to 50 calls a second; GET /health has
// a generous limit and is never refused.
const (
	orders = "GET /orders"
	health = "GET /health"
)

func rules() []flow.Rule {
	return []flow.Rule{
		{ID: "orders", Resource: orders, Algorithm: flow.AlgoFixedWindow, Limit: 50, Window: time.Second},
		{ID: "health", Resource: health, Algorithm: flow.AlgoTokenBucket, Limit: 1000},
	}
}

// stack is the engine, the alerter and the HTTP server of /metrics and /hook.
type stack struct {
	eng   *flow.Engine
	al    *alerting.Alerter
	srv   *http.Server
	base  string // http://host:port
	hooks chan hookMessage
}

// hookMessage is the part of Alertmanager's webhook v4 payload printed here.
type hookMessage struct {
	Version  string `json:"version"`
	Status   string `json:"status"`
	GroupKey string `json:"groupKey"`
	Alerts   []struct {
		Labels      map[string]string `json:"labels"`
		StartsAt    time.Time         `json:"startsAt"`
		EndsAt      time.Time         `json:"endsAt"`
		Fingerprint string            `json:"fingerprint"`
	} `json:"alerts"`
}

func newStack(out io.Writer, addr string, clk clock.Clock, opts ...alerting.Option) (*stack, error) {
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules(rules()); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &stack{eng: eng, base: "http://" + ln.Addr().String(), hooks: make(chan hookMessage, 16)}
	hook, err := alerting.NewWebhookSink(s.base+"/hook", alerting.WithReceiver("demo"), alerting.WithRetries(1))
	if err != nil {
		ln.Close()
		return nil, err
	}
	var mu sync.Mutex // the two sinks print from their own goroutines
	printer := alerting.SinkFunc(func(_ context.Context, a alerting.Alert) error {
		mu.Lock()
		defer mu.Unlock()
		printAlert(out, clk, a)
		return nil
	})
	opts = append([]alerting.Option{alerting.WithClock(clk), alerting.WithSink(printer), alerting.WithSink(hook),
		alerting.WithOverall(false), alerting.WithLabels(map[string]string{"service": "shop"})}, opts...)
	s.al = alerting.New(eng, opts...)
	if err := s.al.Err(); err != nil {
		ln.Close()
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.NewCollector(eng, metrics.WithAlerts(s.al))); err != nil {
		ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("POST /hook", func(w http.ResponseWriter, r *http.Request) {
		var m hookMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case s.hooks <- m:
		default:
		}
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// close stops the alerter (delivering what is queued) and the server.
func (s *stack) close() error {
	_ = s.al.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

func printAlert(out io.Writer, clk clock.Clock, a alerting.Alert) {
	fmt.Fprintf(out, "[%s] ALERT %s %s{resource=%q}: %s\n", clk.Now().Format(time.TimeOnly),
		strings.ToUpper(a.Status), a.Name, a.Resource, a.Annotations["summary"])
	fmt.Fprintf(out, "           %s\n", a.Annotations["description"])
}

// send makes n calls to resource now; it returns how many were refused.
func send(eng *flow.Engine, resource string, n int) (blocked int) {
	for range n {
		p, err := eng.Entry(resource)
		if err != nil {
			blocked++
			continue
		}
		p.Exit()
	}
	return blocked
}

// runDemo plays virtual time: 90 seconds at twice the orders limit (the
// alert goes pending at the first evaluation and fires 30s later), a scrape
// of /metrics, then load within the limit until the alert resolves.
func runDemo(out io.Writer, addr string) error {
	clk := clock.NewFake(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	s, err := newStack(out, addr, clk) // the defaults: 0.3, 1m window, for 30s, every 10s
	if err != nil {
		return err
	}
	defer s.close()
	fmt.Fprintf(out, "serving %s/metrics; alert: blocked/(passed+waited+blocked) over %v > %v for %v, at least %d calls\n",
		s.base, s.al.Config().Window, s.al.Config().RejectionRatio, s.al.Config().For, s.al.Config().MinRequests)
	ctx := context.Background()
	if err := s.al.Evaluate(ctx); err != nil {
		return err
	}
	// One evaluation interval (10s) of load, a second at a time.
	tick := func(ordersPerSecond int) error {
		for range 10 {
			send(s.eng, orders, ordersPerSecond)
			send(s.eng, health, 20)
			clk.Advance(time.Second)
		}
		if err := s.al.Evaluate(ctx); err != nil {
			return err
		}
		return s.al.Flush(ctx)
	}
	fmt.Fprintln(out, "load: 100 calls/s to GET /orders (limit 50/s), 20 calls/s to GET /health")
	last := alerting.Inactive
	for range 9 {
		if err := tick(100); err != nil {
			return err
		}
		last = logState(out, clk, s.al, last)
	}
	if last != alerting.Firing {
		return errors.New("the alert did not fire")
	}
	if err := scrape(out, s.base+"/metrics"); err != nil {
		return err
	}
	fmt.Fprintln(out, "load: 30 calls/s to GET /orders")
	for range 12 {
		if err := tick(30); err != nil {
			return err
		}
		if last = logState(out, clk, s.al, last); last == alerting.Resolved {
			break
		}
	}
	if last != alerting.Resolved {
		return errors.New("the alert did not resolve")
	}
	return printHooks(out, s.hooks, 2)
}

// logState prints the orders state when it changes.
func logState(out io.Writer, clk clock.Clock, al *alerting.Alerter, last alerting.State) alerting.State {
	for _, st := range al.State() {
		if st.Resource == orders && st.State != last {
			fmt.Fprintf(out, "[%s] %s: %s (ratio %.2f over %d calls)\n", clk.Now().Format(time.TimeOnly),
				orders, st.State, st.Ratio, st.Requests)
			return st.State
		}
	}
	return last
}

// scrape fetches /metrics once and prints the alert and orders lines.
func scrape(out io.Writer, url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	fmt.Fprintln(out, "GET /metrics (excerpt):")
	found := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "flowgate_alerts_firing{") ||
			(strings.HasPrefix(line, "flowgate_requests_total{") && strings.Contains(line, orders)) {
			fmt.Fprintln(out, "  "+line)
			found = found || strings.HasPrefix(line, "flowgate_alerts_firing{")
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if !found {
		return errors.New("/metrics has no flowgate_alerts_firing series")
	}
	return nil
}

// printHooks prints the webhook v4 messages the program's /hook received.
func printHooks(out io.Writer, hooks <-chan hookMessage, want int) error {
	for i := range want {
		select {
		case m := <-hooks:
			a := m.Alerts[0]
			fmt.Fprintf(out, "webhook v%s %s %s: %s fingerprint %s startsAt %s endsAt %s\n", m.Version, m.Status,
				m.GroupKey, a.Labels["alertname"], a.Fingerprint, a.StartsAt.Format(time.RFC3339), a.EndsAt.Format(time.RFC3339))
		case <-time.After(5 * time.Second):
			return fmt.Errorf("webhook: got %d of %d messages", i, want)
		}
	}
	return nil
}
