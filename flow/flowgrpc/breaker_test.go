package flowgrpc

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

func TestBreakerOpensOnServerFaultsAnswersUnavailable(t *testing.T) {
	rule := flow.Rule{ID: "dep", Resource: checkMethod, Algorithm: flow.AlgoCircuitBreaker,
		Strategy: flow.BreakerErrorCount, Threshold: 4, MinRequests: 4, Window: 10 * time.Second, OpenFor: 5 * time.Second}
	faults := []codes.Code{codes.Unavailable, codes.Internal, codes.DeadlineExceeded, codes.Unknown}
	for _, notFault := range []codes.Code{codes.InvalidArgument, codes.NotFound, codes.ResourceExhausted} {
		t.Run(notFault.String(), func(t *testing.T) {
			clk := clock.NewFake(epoch)
			eng := newEngine(t, clk, rule)
			ic := UnaryServerInterceptor(eng)
			info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
			calls := 0
			call := func(c codes.Code) error {
				_, err := ic(context.Background(), nil, info, func(context.Context, any) (any, error) {
					calls++
					if c == codes.Unknown {
						return nil, errors.New("a plain error is Unknown")
					}
					return nil, status.Error(c, "dependency")
				})
				return err
			}
			for i := 0; i < 10; i++ {
				call(notFault) // the caller's fault: never opens the breaker
			}
			for _, c := range faults {
				if err := call(c); status.Code(err) != c {
					t.Fatalf("handler's %v came back as %v", c, err)
				}
			}
			clk.Advance(2 * time.Second)
			before := calls
			err := call(codes.OK)
			if calls != before {
				t.Fatal("the handler ran behind an open breaker")
			}
			st, _ := status.FromError(err)
			if st.Code() != codes.Unavailable {
				t.Fatalf("open breaker: %v, want Unavailable", err)
			}
			if d, ok := RetryDelay(err); !ok || d != 3*time.Second {
				t.Fatalf("RetryInfo %v %v, want 3s", d, ok)
			}
			var reason string
			for _, det := range st.Details() {
				if ei, ok := det.(*errdetails.ErrorInfo); ok {
					reason = ei.GetReason()
				}
			}
			if reason != ReasonCircuitOpen {
				t.Fatalf("ErrorInfo reason %q, want %q", reason, ReasonCircuitOpen)
			}
		})
	}
}
