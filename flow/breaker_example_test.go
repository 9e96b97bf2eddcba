package flow_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// A breaker on a failing dependency: it opens once 3 of at least 4 calls
// in the window failed, refuses for OpenFor, then lets one probe through;
// the probe succeeds and the breaker closes. WithFallback serves while it
// is open.
func Example_circuitBreaker() {
	clk := clock.NewFake(time.Unix(0, 0))
	eng := flow.NewEngine(flow.WithClock(clk), flow.WithBreakerListener(func(ev flow.BreakerEvent) {
		fmt.Printf("  breaker %s -> %s (measure %v)\n", ev.From, ev.To, ev.Measure)
	}))
	err := eng.LoadRules([]flow.Rule{{
		ID: "rates", Resource: "GET /rates", Algorithm: flow.AlgoCircuitBreaker,
		Strategy: flow.BreakerErrorCount, Threshold: 3, MinRequests: 4, Window: 10 * time.Second, OpenFor: 5 * time.Second,
	}})
	if err != nil {
		panic(err)
	}
	down := errors.New("rates service down")
	call := func(fail bool) {
		err := eng.Guard(context.Background(), "GET /rates", func(context.Context) error {
			if fail {
				return down
			}
			return nil
		}, flow.WithFallback(func(_ context.Context, be *flow.BlockError) error {
			fmt.Printf("fallback: %s, retry after %v\n", be.Reason, be.RetryAfter)
			return nil
		}))
		fmt.Println("result:", err)
	}
	call(false)
	call(true)
	call(true)
	call(true) // the 3rd error of 4 calls opens it
	clk.Advance(time.Second)
	call(false) // refused: the fallback answers
	clk.Advance(4 * time.Second)
	call(false) // the probe
	// Output:
	// result: <nil>
	// result: rates service down
	// result: rates service down
	//   breaker closed -> open (measure 3)
	// result: rates service down
	// fallback: circuit breaker open, retry after 4s
	// result: <nil>
	//   breaker open -> half_open (measure 0)
	//   breaker half_open -> closed (measure 0)
	// result: <nil>
}
