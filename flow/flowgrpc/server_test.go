package flowgrpc

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// wantExhausted checks err is ResourceExhausted with the given RetryInfo
// delay (0: no RetryInfo) and an ErrorInfo naming rule.
func wantExhausted(t *testing.T, err error, retry time.Duration, rule string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		t.Fatalf("error %v, want ResourceExhausted", err)
	}
	var gotRetry *errdetails.RetryInfo
	var gotInfo *errdetails.ErrorInfo
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			gotRetry = d
		case *errdetails.ErrorInfo:
			gotInfo = d
		}
	}
	switch {
	case retry == 0 && gotRetry != nil:
		t.Errorf("RetryInfo %v, want none (wait unknown)", gotRetry.GetRetryDelay().AsDuration())
	case retry != 0 && gotRetry == nil:
		t.Errorf("no RetryInfo, want %v", retry)
	case retry != 0 && gotRetry.GetRetryDelay().AsDuration() != retry:
		t.Errorf("RetryInfo %v, want %v", gotRetry.GetRetryDelay().AsDuration(), retry)
	}
	if gotInfo == nil || gotInfo.GetReason() != ReasonRateLimited || gotInfo.GetDomain() != Domain || gotInfo.GetMetadata()["rule"] != rule {
		t.Errorf("ErrorInfo %v, want reason %s, domain %s, rule %s", gotInfo, ReasonRateLimited, Domain, rule)
	}
	if d, ok := RetryDelay(err); ok != (retry != 0) || d != retry {
		t.Errorf("RetryDelay = %v, %v; want %v", d, ok, retry)
	}
}

func serverOpts(eng *flow.Engine, opts ...Option) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(UnaryServerInterceptor(eng, opts...)),
		grpc.ChainStreamInterceptor(StreamServerInterceptor(eng, opts...)),
	}
}

func TestUnaryServerResourceExhausted(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := newEngine(t, clk, flow.Rule{ID: "check", Resource: checkMethod, Algorithm: flow.AlgoFixedWindow,
		Limit: 1, Window: 10 * time.Second})
	ts := startServer(t, serverOpts(eng))
	clk.Advance(2500 * time.Millisecond)
	ctx := context.Background()
	if _, err := ts.client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("first Check: %v", err)
	}
	_, err := ts.client.Check(ctx, &healthpb.HealthCheckRequest{})
	wantExhausted(t, err, 7500*time.Millisecond, "check")
	clk.Advance(7500 * time.Millisecond)
	if _, err := ts.client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("Check after the RetryInfo delay: %v", err)
	}
	if n := eng.InFlight(); n != 0 {
		t.Errorf("in flight = %d, want 0", n)
	}
}

func TestStreamServerResourceExhausted(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := newEngine(t, clk, flow.Rule{ID: "watch-rate", Resource: watchMethod, Algorithm: flow.AlgoFixedWindow,
		Limit: 1, Window: 4 * time.Second})
	ts := startServer(t, serverOpts(eng))
	clk.Advance(time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := ts.client.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := first.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first Watch: %v, %v", resp, err)
	}
	second, err := ts.client.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = second.Recv()
	wantExhausted(t, err, 3*time.Second, "watch-rate")
	if err := recv(t, ts.streamDone); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("refused stream's handler chain returned %v", err)
	}
}

// A concurrency rule counts open streams: the permit is held while the
// stream is open and released when its handler returns.
func TestStreamPermitReleasedWhenStreamEnds(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "one-watch", Resource: watchMethod,
		Algorithm: flow.AlgoConcurrency, Limit: 1})
	ts := startServer(t, serverOpts(eng))
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	first, err := ts.client.Watch(ctx1, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Recv(); err != nil {
		t.Fatal(err)
	}
	if n := eng.InFlight(); n != 1 {
		t.Fatalf("in flight with one open stream = %d, want 1", n)
	}
	second, err := ts.client.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = second.Recv()
	wantExhausted(t, err, 0, "one-watch") // concurrency: no honest delay to offer
	recv(t, ts.streamDone)                // the refused one

	cancel1() // the client ends the first stream
	if err := recv(t, ts.streamDone); status.Code(err) != codes.Canceled {
		t.Errorf("first stream's handler returned %v, want Canceled", err)
	}
	if n := eng.InFlight(); n != 0 {
		t.Fatalf("in flight after the stream ended = %d, want 0", n)
	}
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	third, err := ts.client.Watch(ctx3, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := third.Recv(); err != nil {
		t.Fatalf("a new stream after the first ended: %v", err)
	}
}

func TestServerFailuresRecorded(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "r", Resource: checkMethod, Algorithm: flow.AlgoFixedWindow, Limit: 100})
	ic := UnaryServerInterceptor(eng)
	info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
	for _, err := range []error{nil, status.Error(codes.NotFound, "x"), status.Error(codes.Internal, "x"), errors.New("plain")} {
		_, got := ic(context.Background(), nil, info, func(context.Context, any) (any, error) { return nil, err })
		if got != err {
			t.Errorf("interceptor returned %v, want the handler's %v", got, err)
		}
	}
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recovered %v, want the handler's panic", v)
			}
		}()
		_, _ = ic(context.Background(), nil, info, func(context.Context, any) (any, error) { panic("boom") })
	}()
	var rs flow.ResourceStats
	for _, r := range eng.Snapshot().Resources {
		if r.Resource == checkMethod {
			rs = r
		}
	}
	if rs.Completed != 5 || rs.Errors != 3 {
		t.Errorf("completed %d errors %d, want 5 and 3 (Internal, plain error, panic)", rs.Completed, rs.Errors)
	}
	if eng.InFlight() != 0 {
		t.Errorf("in flight = %d, want 0", eng.InFlight())
	}
}

func TestServerWaitCancelled(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "q", Resource: checkMethod, Algorithm: flow.AlgoFixedWindow,
		Limit: 1, Window: time.Second, MaxWait: 5 * time.Second})
	ic := UnaryServerInterceptor(eng)
	info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
	ok := func(context.Context, any) (any, error) { return "ok", nil }
	if _, err := ic(context.Background(), nil, info, ok); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the caller is gone before its queued turn
	if _, err := ic(ctx, nil, info, ok); status.Code(err) != codes.Canceled {
		t.Errorf("cancelled queued call: %v, want Canceled", err)
	}
}
