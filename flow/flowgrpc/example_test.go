package flowgrpc_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/flow/flowgrpc"
)

func ExampleUnaryServerInterceptor() {
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	_ = eng.LoadRules([]flow.Rule{{ID: "checks", Resource: "/grpc.health.v1.Health/Check",
		Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: 30 * time.Second}})
	intercept := flowgrpc.UnaryServerInterceptor(eng)
	// What grpc.NewServer(grpc.ChainUnaryInterceptor(intercept)) does per call:
	info := &grpc.UnaryServerInfo{FullMethod: "/grpc.health.v1.Health/Check"}
	handler := func(context.Context, any) (any, error) { return "SERVING", nil }
	for i := 0; i < 2; i++ {
		resp, err := intercept(context.Background(), nil, info, handler)
		if err != nil {
			delay, _ := flowgrpc.RetryDelay(err)
			fmt.Println(status.Code(err), "retry in", delay)
			continue
		}
		fmt.Println(resp)
	}
	// Output:
	// SERVING
	// ResourceExhausted retry in 30s
}
