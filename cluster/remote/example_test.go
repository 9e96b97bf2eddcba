package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/flowgate/flowgate/cluster/remote"
	"github.com/flowgate/flowgate/cluster/tokenrpc"
	"github.com/flowgate/flowgate/flow"
)

// countdown admits n calls, then refuses: a stand-in for a
// RedisTokenServer behind `flowgate serve`.
type countdown struct{ n int }

func (c *countdown) Acquire(context.Context, flow.TokenRequest) (flow.TokenResult, error) {
	if c.n--; c.n >= 0 {
		return flow.TokenResult{Allowed: true, Refused: -1}, nil
	}
	return flow.TokenResult{Refused: 0, RetryAfter: time.Second}, nil
}
func (c *countdown) Release(context.Context, flow.TokenRequest, flow.TokenResult) error { return nil }
func (c *countdown) Instances() int                                                     { return 1 }

// An engine whose cluster rules are decided by a token service replica.
func ExampleNew() {
	srv, _ := tokenrpc.NewServer(&countdown{n: 2}, nil)
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(lis)
	defer srv.Shutdown(context.Background())

	ts, err := remote.New([]string{lis.Addr().String()}, remote.WithTimeout(time.Second))
	if err != nil {
		panic(err)
	}
	defer ts.Close()
	eng := flow.NewEngine(flow.WithTokenServer(ts))
	eng.LoadRules([]flow.Rule{{ID: "orders", Resource: "GET /orders", Algorithm: flow.AlgoFixedWindow, Limit: 2,
		Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "deny"}}})
	for range 3 {
		p, err := eng.Entry("GET /orders")
		var be *flow.BlockError
		if errors.As(err, &be) {
			fmt.Println("blocked by", be.RuleID, "retry after", be.RetryAfter)
			continue
		}
		fmt.Println("passed")
		p.Exit()
	}
	// Output:
	// passed
	// passed
	// blocked by orders retry after 1s
}
