package remote

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/internal/wire"
	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestTokensBeyondRuleNeverThroughServe (issue 33, B1): through `serve`
// (the remote client, tokenrpc, the Redis token server), math.MaxInt32
// tokens of a limit-5 rule are refused at once as never on every
// algorithm the token server decides, and the next call of one token
// passes: the refusal took nothing.
func TestTokensBeyondRuleNeverThroughServe(t *testing.T) {
	srv := redistest.Start(t)
	_, addrs := redisReplicas(t, srv, 1)
	for _, algo := range []flow.Algorithm{flow.AlgoTokenBucket, flow.AlgoWarmUp, flow.AlgoLeakyBucket,
		flow.AlgoFixedWindow, flow.AlgoSlidingWindow, flow.AlgoSlidingLog, flow.AlgoConcurrency} {
		t.Run(algo.String(), func(t *testing.T) {
			res := uniq(algo.String())
			r := crule("x", res, algo, 5, time.Second)
			switch algo {
			case flow.AlgoWarmUp:
				r.Warmup = 10 * time.Second
			case flow.AlgoConcurrency:
				r.Window = 0
			}
			// On the wire: BLOCKED, retry_after_nanos 2^63-1 (flow.Never).
			cc, err := grpc.NewClient(addrs[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			wr := r.WithDefaults()
			in := &tokenpb.AcquireRequest{Resource: res, Tokens: math.MaxInt32, Rules: []*tokenpb.Rule{wire.FromRule(&wr)}}
			out, err := tokenpb.NewTokenServiceClient(cc).Acquire(context.Background(), in)
			if err != nil || out.Status != tokenpb.Status_STATUS_BLOCKED || out.RetryAfterNanos != int64(flow.Never) {
				t.Fatalf("raw Acquire of MaxInt32 tokens: %v, %v; want BLOCKED, retry after %d", out, err, int64(flow.Never))
			}
			es, _ := remoteEngines(t, addrs, 1, r)
			_, err = es[0].Entry(res, flow.WithTokens(math.MaxInt32))
			var be *flow.BlockError
			if !errors.As(err, &be) || !be.Never || be.RetryAfter != flow.Never || be.Reason != flow.ReasonClusterLimited {
				t.Fatalf("WithTokens(MaxInt32): got %v, want a never refusal", err)
			}
			p, err := es[0].Entry(res)
			if err != nil {
				t.Fatalf("one token after the refusal: %v", err)
			}
			p.Exit()
		})
	}
}
