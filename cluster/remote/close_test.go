package remote

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// TestRemoteCloseLeavesNoGoroutine: after Close, the client's connections
// and their goroutines are gone, and Close is idempotent.
func TestRemoteCloseLeavesNoGoroutine(t *testing.T) {
	rep := startRemoteReplica(t, allowAll{})
	rule := crule("r", "close", flow.AlgoFixedWindow, 10, time.Second)
	req := flow.TokenRequest{Resource: "close", Tokens: 1, Factor: 1, Rules: []*flow.Rule{&rule}}
	before := runtime.NumGoroutine()
	c, err := New([]string{rep.addr, rep.addr}, WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Acquire(context.Background(), req); err != nil || !res.Allowed {
		t.Fatalf("Acquire: %+v, %v", res, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// gRPC ends a closed connection's goroutines asynchronously.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := c.Acquire(context.Background(), req); err == nil {
		t.Fatal("Acquire after Close succeeded")
	}
}
