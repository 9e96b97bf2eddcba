package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/flowgate/flowgate/internal/testing/promtest"
)

// TestDemoInPrometheus is the README's "watching it in Prometheus": the
// demo on a fixed -addr, a real Prometheus with prometheus.yml's intervals
// and alerts.yml's rule, and the alert must fire within a default-length
// (20 s) run.
func TestDemoInPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo's 20 s of real traffic under a real prometheus")
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		if out, err := exec.Command(p, "check", "config", "prometheus.yml").CombinedOutput(); err != nil {
			t.Fatalf("promtool check config prometheus.yml: %v\n%s", err, out)
		}
	} else if os.Getenv("FLOWGATE_REQUIRE_PROMETHEUS") == "1" {
		t.Fatal("promtool is not on PATH, and FLOWGATE_REQUIRE_PROMETHEUS=1: prometheus.yml cannot be checked")
	} else {
		t.Log("promtool is not on PATH: prometheus.yml is not checked")
	}
	conf, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s+scrape_interval: 1s$`).Match(conf) {
		t.Fatal("prometheus.yml no longer scrapes every 1s; update this test's interval")
	}
	rules, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port for -addr
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	prom := promtest.Start(t, promtest.Config{Targets: []string{addr}, Interval: time.Second,
		RuleFiles: map[string]string{"alerts.yml": string(rules)}})

	// The demo runs long enough for Prometheus to fire on a slow (loaded)
	// machine; the test stops it once the alert fired.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	began := time.Now()
	go func() {
		var buf bytes.Buffer
		_, err := run(ctx, func() {}, config{duration: 120 * time.Second, addr: addr, plain: true, out: &buf, workers: 64})
		done <- result{buf.String(), err}
	}()
	// Prometheus must fire before the demo ends.
	fired := make(chan promtest.Alert, 1)
	go func() {
		if a, err := prom.WaitFiring(ctx, "FlowgateHighRejectionRatio"); err == nil {
			fired <- a
		}
	}()
	select {
	case a := <-fired:
		t.Logf("firing for %s %v after the demo started", a.Labels["resource"], time.Since(began).Round(time.Second))
	case r := <-done:
		cancel()
		t.Fatalf("the demo ended (err %v) before Prometheus fired the alert; prometheus log:\n%s\ndemo:\n%s", r.err, prom.Log(), r.out)
	}
	cancel()
	if r := <-done; r.err != nil && !errors.Is(r.err, context.Canceled) {
		t.Fatalf("demo: %v\n%s", r.err, r.out)
	}
}
