package remote

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/cluster/tokenrpc"
	"github.com/flowgate/flowgate/flow"
)

// TestRemoteBusyServer: a replica over its namespace cap answers
// TOO_MANY_REQUEST; the engine applies the rule's fallback, and the
// replica's breaker stays closed (it answered).
func TestRemoteBusyServer(t *testing.T) {
	clk := clock.NewFake(t0)
	rep := startRemoteReplica(t, allowAll{}, tokenrpc.WithMaxQPS(3), tokenrpc.WithClock(clk))
	c := newRemote(t, []string{rep.addr}, WithTimeout(time.Second), WithNamespace("orders-service"),
		WithBreaker(2, time.Hour)) // would open after 2 failures
	r := crule("r", "busy", flow.AlgoFixedWindow, 100, time.Second)
	e := newEngine(t, c, t0, r)
	var reasons []string
	for range 5 {
		p, err := e.Entry("busy")
		var be *flow.BlockError
		switch {
		case err == nil:
			reasons = append(reasons, "pass")
			p.Exit()
		case errors.As(err, &be):
			reasons = append(reasons, be.Reason)
		default:
			t.Fatal(err)
		}
	}
	want := []string{"pass", "pass", "pass", flow.ReasonClusterUnavailable, flow.ReasonClusterUnavailable}
	for i := range want {
		if reasons[i] != want[i] {
			t.Fatalf("got %q, want %q", reasons, want)
		}
	}
	rule := r.WithDefaults()
	_, err := c.Acquire(context.Background(), flow.TokenRequest{Resource: "busy", Tokens: 1, Factor: 1, Rules: []*flow.Rule{&rule}})
	var re *ReplicaError
	if !errors.As(err, &re) || re.Status != tokenpb.Status_STATUS_TOO_MANY_REQUEST || !errors.Is(err, flow.ErrTokenServerUnavailable) {
		t.Fatalf("Acquire over the cap: %v, want a TOO_MANY_REQUEST ReplicaError wrapping ErrTokenServerUnavailable", err)
	}
	if c.BreakerOpen() || rep.srv.Requests("acquire", tokenpb.Status_STATUS_TOO_MANY_REQUEST) != 3 {
		t.Fatalf("breaker open %v, server's too-many count %d; want closed and 3", c.BreakerOpen(), rep.srv.Requests("acquire", tokenpb.Status_STATUS_TOO_MANY_REQUEST))
	}
	clk.Advance(time.Second)
	if p, err := e.Entry("busy"); err != nil {
		t.Fatalf("next second: %v", err)
	} else {
		p.Exit()
	}
}
