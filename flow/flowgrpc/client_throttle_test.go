package flowgrpc

import (
	"context"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// TestUnaryClientThrottle: a real server answering UNAVAILABLE to every
// call; the client_throttle soon refuses most calls locally, and they never
// reach the server.
func TestUnaryClientThrottle(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := newEngine(t, clk, flow.Rule{ID: "thr", Resource: checkMethod, Algorithm: flow.AlgoClientThrottle})
	var reached atomic.Int64
	refuse := grpc.ChainUnaryInterceptor(func(context.Context, any, *grpc.UnaryServerInfo, grpc.UnaryHandler) (any, error) {
		reached.Add(1)
		return nil, status.Error(codes.Unavailable, "overloaded")
	})
	ts := startServer(t, []grpc.ServerOption{refuse}, grpc.WithChainUnaryInterceptor(UnaryClientInterceptor(eng)))
	local := 0
	for range 200 {
		_, err := ts.client.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if status.Code(err) == codes.Unavailable {
			continue // the server's answer
		}
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("err %v, want the server's UNAVAILABLE or a local refusal", err)
		}
		local++
	}
	if local < 150 || reached.Load()+int64(local) != 200 {
		t.Fatalf("%d refused locally, %d reached the server, want >= 150 local and the rest sent", local, reached.Load())
	}
	st := eng.Snapshot().Rules[0].Outbound
	if st == nil || st.Accepts != 0 || st.Requests != 200 {
		t.Fatalf("throttle stats %+v, want 200 requests, 0 accepts", st)
	}
}
