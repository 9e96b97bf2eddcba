package flowgrpc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// countCalls is a server interceptor counting the calls that reached it.
func countCalls(n *atomic.Int64) grpc.ServerOption {
	return grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		n.Add(1)
		return h(ctx, req)
	})
}

func TestUnaryClientRefusesLocally(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := newEngine(t, clk, flow.Rule{ID: "out", Resource: checkMethod, Level: flow.LevelUser,
		Algorithm: flow.AlgoTokenBucket, Limit: 1, Window: 2 * time.Second, Burst: 1})
	var reached atomic.Int64
	ts := startServer(t, []grpc.ServerOption{countCalls(&reached)},
		grpc.WithChainUnaryInterceptor(UnaryClientInterceptor(eng, WithUser(UserFromMetadata("x-user")))))
	ann := metadata.AppendToOutgoingContext(context.Background(), "x-user", "ann")
	bob := metadata.AppendToOutgoingContext(context.Background(), "x-user", "bob")
	// Guava: the stored permit, then one on credit.
	for i := 0; i < 2; i++ {
		if _, err := ts.client.Check(ann, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err := ts.client.Check(ann, &healthpb.HealthCheckRequest{})
	wantExhausted(t, err, 2*time.Second, "out")
	if _, err := ts.client.Check(bob, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("another user: %v", err)
	}
	if got := reached.Load(); got != 3 {
		t.Errorf("%d calls reached the server, want 3: the refused one must not be sent", got)
	}
}

func TestStreamClientPermitHeldUntilStreamEnds(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "one-out", Resource: watchMethod,
		Algorithm: flow.AlgoConcurrency, Limit: 1})
	ts := startServer(t, nil, grpc.WithChainStreamInterceptor(StreamClientInterceptor(eng)))

	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	first, err := ts.client.Watch(ctx1, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Recv(); err != nil {
		t.Fatal(err)
	}
	_, err = ts.client.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	wantExhausted(t, err, 0, "one-out")

	// Ending the stream by cancelling its context releases the permit.
	cancel1()
	if _, err := first.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("Recv after cancel: %v", err)
	}
	if n := eng.InFlight(); n != 0 {
		t.Fatalf("in flight after the stream ended = %d, want 0", n)
	}
	// A second stream, ended the same way.
	ctx2, cancel2 := context.WithCancel(context.Background())
	second, err := ts.client.Watch(ctx2, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	if _, err := second.Recv(); err != nil {
		t.Fatal(err)
	}
	if n := eng.InFlight(); n != 1 {
		t.Fatalf("in flight with the second stream open = %d, want 1", n)
	}
	cancel2()
	_, _ = second.Recv()
	if n := eng.InFlight(); n != 0 {
		t.Fatalf("in flight after the second stream = %d, want 0", n)
	}
}
