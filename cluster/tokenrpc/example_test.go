package tokenrpc_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/cluster/tokenrpc"
	"github.com/flowgate/flowgate/flow"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// firstOnly admits the first call and refuses the rest: a stand-in for
// cluster.RedisTokenServer.
type firstOnly struct{ n int }

func (f *firstOnly) Acquire(_ context.Context, req flow.TokenRequest) (flow.TokenResult, error) {
	f.n++
	if f.n == 1 {
		return flow.TokenResult{Allowed: true, Refused: -1}, nil
	}
	return flow.TokenResult{Refused: 0, RetryAfter: time.Second}, nil
}
func (f *firstOnly) Release(context.Context, flow.TokenRequest, flow.TokenResult) error { return nil }
func (f *firstOnly) Instances() int                                                     { return 1 }

// A server serving the rules of a document by id, on loopback.
func ExampleNewServer() {
	doc := map[string]*flow.Rule{"orders": {ID: "orders", Resource: "GET /orders", Algorithm: flow.AlgoFixedWindow,
		Limit: 1, Window: time.Second, Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "deny"}}}
	srv, err := tokenrpc.NewServer(&firstOnly{}, func(id string) (*flow.Rule, bool) { r, ok := doc[id]; return r, ok })
	if err != nil {
		panic(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(lis)
	defer srv.Shutdown(context.Background())

	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	client := tokenpb.NewTokenServiceClient(cc)
	for _, ids := range [][]string{{"orders"}, {"orders"}, {"nope"}} {
		out, err := client.Acquire(context.Background(), &tokenpb.AcquireRequest{Resource: "GET /orders", Tokens: 1, RuleIds: ids})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%v %q\n", out.Status, out.RefusedRuleId)
	}
	// Output:
	// STATUS_OK ""
	// STATUS_BLOCKED "orders"
	// STATUS_NO_RULE_EXISTS ""
}
