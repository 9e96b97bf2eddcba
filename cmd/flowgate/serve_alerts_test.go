package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// TestServeAlertsFollowDocument: serve's alerter judges the token
// service's decisions with the thresholds of the document's "alerting"
// section, and a reloaded section changes them from the next evaluation.
func TestServeAlertsFollowDocument(t *testing.T) {
	parse := func(alertingSection string) *rules.Document {
		t.Helper()
		doc, err := rules.Parse([]byte(`{"rules": [], "alerting": ` + alertingSection + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	// The decisions as tokenrpc.Server.Snapshot reports them: 6 granted and
	// 4 refused by each evaluation, a ratio of 0.4.
	var mu sync.Mutex
	var passed, blocked uint64
	clk := clock.NewFake(time.Unix(0, 0))
	snapshots := func() flow.Snapshot {
		mu.Lock()
		defer mu.Unlock()
		passed, blocked = passed+6, blocked+4
		rs := flow.ResourceStats{Resource: "GET /orders", Passed: passed}
		rs.Blocked[flow.LevelGlobal] = blocked
		return flow.Snapshot{Time: clk.Now(), Resources: []flow.ResourceStats{rs}}
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	sa, err := newServeAlerts(parse(`{"rejectionRatio": 0.3, "minRequests": 1, "for": "0s", "interval": "1s", "window": "10s"}`),
		snapshots, clk, log)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	state := func() alerting.State {
		t.Helper()
		clk.Advance(time.Second)
		if err := sa.al.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, s := range sa.al.State() {
			if s.Resource == "GET /orders" {
				return s.State
			}
		}
		t.Fatalf("no state for GET /orders: %+v", sa.al.State())
		return 0
	}
	state() // the baseline sample
	if got := state(); got != alerting.Firing {
		t.Fatalf("ratio 0.4 over rejectionRatio 0.3: %v, want firing", got)
	}

	sa.apply(parse(`{"rejectionRatio": 0.9, "minRequests": 1, "for": "0s", "interval": "1s", "window": "10s",
		"webhook": "http://127.0.0.1:9/hook"}`))
	if got := sa.al.Config(); got.RejectionRatio != 0.9 || got.ResolveRatio != (alerting.Config{RejectionRatio: 0.9}).WithResolveDefault().ResolveRatio {
		t.Fatalf("config after the reload: %+v, want rejectionRatio 0.9 and its default resolve ratio", got)
	}
	if got := state(); got != alerting.Resolved {
		t.Fatalf("ratio 0.4 under the reloaded resolve ratio: %v, want resolved", got)
	}
	sa.Close() // the slog sink's goroutine is done writing the log
	out := logs.String()
	if n := strings.Count(out, "alerting section applied"); n != 2 {
		t.Errorf("%d 'alerting section applied' lines, want 2 (start, reload):\n%s", n, out)
	}
	if !strings.Contains(out, "rejectionRatio=0.9") || !strings.Contains(out, "webhook changed") {
		t.Errorf("log lacks the reloaded ratio or the webhook warning:\n%s", out)
	}
}
