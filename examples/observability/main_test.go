package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the virtual-time demo in-process: it fails unless the alert
// fired, showed on /metrics, resolved, and reached the webhook as v4 JSON.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := runDemo(&out, "127.0.0.1:0"); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`[12:00:10] GET /orders: pending (ratio 0.50 over 1000 calls)`,
		`[12:00:40] ALERT FIRING FlowgateHighRejectionRatio{resource="GET /orders"}: flowgate blocks 50% of calls to "GET /orders"`,
		`flowgate_alerts_firing{alert="FlowgateHighRejectionRatio",resource="GET /orders"} 1`,
		`ALERT RESOLVED FlowgateHighRejectionRatio{resource="GET /orders"}`,
		`webhook v4 firing {}:{alertname="FlowgateHighRejectionRatio", resource="GET /orders"}`,
		`webhook v4 resolved`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "ALERT "); n != 2 {
		t.Errorf("%d alerts printed, want firing and resolved:\n%s", n, out.String())
	}
}

// TestServe runs the real-time mode briefly: it must serve and stop.
func TestServe(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	var out bytes.Buffer
	if err := runServe(&out, "127.0.0.1:0", 300*time.Millisecond); err != nil {
		t.Fatalf("serve: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "/metrics; load cycles") {
		t.Errorf("output:\n%s", out.String())
	}
}
