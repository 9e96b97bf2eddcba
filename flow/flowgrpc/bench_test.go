package flowgrpc

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

func trivialHandler(context.Context, any) (any, error) { return nil, nil }

func benchUnary(b *testing.B, ic grpc.UnaryServerInterceptor) {
	ctx := callCtx(tcp("198.51.100.4:5000"))
	info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ic == nil {
			_, _ = trivialHandler(ctx, nil)
			continue
		}
		_, _ = ic(ctx, nil, info, trivialHandler)
	}
}

func passRules() []flow.Rule {
	return []flow.Rule{
		{ID: "g", Resource: checkMethod, Algorithm: flow.AlgoTokenBucket, Limit: 1e12, Window: time.Second},
		{ID: "i", Resource: checkMethod, Level: flow.LevelIP, Algorithm: flow.AlgoTokenBucket, Limit: 1e12, Window: time.Second},
	}
}

// BenchmarkBareUnaryHandler is the baseline for the interceptor benchmarks.
func BenchmarkBareUnaryHandler(b *testing.B) { benchUnary(b, nil) }

// BenchmarkUnaryServerInterceptorPass: global and per-IP token buckets that
// never refuse, the handler called directly (no transport).
func BenchmarkUnaryServerInterceptorPass(b *testing.B) {
	benchUnary(b, UnaryServerInterceptor(newEngine(b, clock.Real(), passRules()...)))
}

// BenchmarkUnaryServerInterceptorBlocked: every call refused (status with
// RetryInfo and ErrorInfo details).
func BenchmarkUnaryServerInterceptorBlocked(b *testing.B) {
	eng := newEngine(b, clock.NewFake(epoch), flow.Rule{ID: "none", Resource: checkMethod,
		Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Hour})
	_, _ = UnaryServerInterceptor(eng)(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: checkMethod}, trivialHandler)
	benchUnary(b, UnaryServerInterceptor(eng))
}

// BenchmarkHealthCheckBufconn compares a real unary call over bufconn with
// and without the server interceptor.
func BenchmarkHealthCheckBufconn(b *testing.B) {
	for _, guarded := range []bool{false, true} {
		name := "bare"
		var opts []grpc.ServerOption
		if guarded {
			name = "guarded"
			opts = serverOpts(newEngine(b, clock.Real(), passRules()...))
		}
		b.Run(name, func(b *testing.B) {
			ts := startServer(b, opts)
			ctx := context.Background()
			req := &healthpb.HealthCheckRequest{}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := ts.client.Check(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
