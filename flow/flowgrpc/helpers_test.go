package flowgrpc

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	checkMethod = "/grpc.health.v1.Health/Check"
	watchMethod = "/grpc.health.v1.Health/Watch"
)

func newEngine(t testing.TB, clk clock.Clock, rules ...flow.Rule) *flow.Engine {
	t.Helper()
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules(rules); err != nil {
		t.Fatalf("LoadRules: %v", err)
	}
	return eng
}

// testServer is the grpc health service on an in-process bufconn listener.
type testServer struct {
	health *health.Server
	conn   *grpc.ClientConn
	client healthpb.HealthClient
	// streamDone receives once per Watch handler that has returned and whose
	// permit has exited (the observer sits outside the flow interceptor).
	streamDone chan error
}

func startServer(t testing.TB, serverOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) *testServer {
	t.Helper()
	ts := &testServer{health: health.NewServer(), streamDone: make(chan error, 16)}
	lis := bufconn.Listen(1 << 20)
	observe := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		err := handler(srv, ss)
		ts.streamDone <- err
		return err
	}
	serverOpts = append([]grpc.ServerOption{grpc.ChainStreamInterceptor(observe)}, serverOpts...)
	srv := grpc.NewServer(serverOpts...)
	healthpb.RegisterHealthServer(srv, ts.health)
	go func() { _ = srv.Serve(lis) }()
	dialOpts = append(dialOpts,
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	conn, err := grpc.NewClient("passthrough:///bufnet", dialOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
	})
	ts.conn, ts.client = conn, healthpb.NewHealthClient(conn)
	return ts
}

// recv takes the next value from ch. The deadline only turns a lost
// wake-up into a failure instead of a hung test; no logic waits on it.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing received within 10s")
		panic("unreachable")
	}
}
