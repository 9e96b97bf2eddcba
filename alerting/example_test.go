package alerting_test

import (
	"context"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

func Example() {
	clk := clock.NewFake(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules([]flow.Rule{{
		ID: "orders", Resource: "GET /orders", Algorithm: flow.AlgoFixedWindow, Limit: 10, Window: time.Second,
	}}); err != nil {
		panic(err)
	}
	print := alerting.SinkFunc(func(_ context.Context, a alerting.Alert) error {
		fmt.Printf("%s %s %q ratio=%.2f since %s", a.Status, a.Name, a.Resource, a.Ratio, a.StartsAt.Format(time.TimeOnly))
		if a.Status == alerting.StatusResolved {
			fmt.Printf(" until %s", a.EndsAt.Format(time.TimeOnly))
		}
		fmt.Println()
		return nil
	})
	al := alerting.New(eng, alerting.WithClock(clk), alerting.WithSink(print), alerting.WithOverall(false))
	defer al.Close()

	ctx := context.Background()
	// calls a second for one evaluation interval (10s), then evaluate.
	tick := func(calls int) {
		for range 10 {
			for range calls {
				if p, err := eng.Entry("GET /orders"); err == nil {
					p.Exit()
				}
			}
			clk.Advance(time.Second)
		}
		_ = al.Evaluate(ctx)
		_ = al.Flush(ctx)
	}
	_ = al.Evaluate(ctx) // the first sample
	for range 6 {
		tick(20) // twice the limit: half blocked; pending at 12:00:10, fires 30s later
	}
	fmt.Println(al.State()[0].State, "at", clk.Now().Format(time.TimeOnly))
	for range 12 {
		tick(5) // within the limit: resolves when the window ratio is under 0.24
	}
	// Output:
	// firing FlowgateHighRejectionRatio "GET /orders" ratio=0.50 since 12:00:10
	// firing at 12:01:00
	// resolved FlowgateHighRejectionRatio "GET /orders" ratio=0.22 since 12:00:10 until 12:01:50
}

func ExampleNewWebhookSink() {
	hook, err := alerting.NewWebhookSink("https://hooks.example.com/alerts?token=secret",
		alerting.WithReceiver("ops"), alerting.WithTimeout(5*time.Second), alerting.WithRetries(3))
	if err != nil {
		panic(err)
	}
	fmt.Println(hook) // the token stays out of logs
	// Output: webhook https://hooks.example.com/alerts?REDACTED
}

func ExampleConfig() {
	cfg := alerting.Defaults()
	cfg.RejectionRatio, cfg.ResolveRatio = 0.5, 0.4
	cfg.For = 0 // fire at the first high evaluation
	fmt.Println(cfg.Validate())
	cfg.ResolveRatio = 0.6
	fmt.Println(cfg.Validate())
	// Output:
	// <nil>
	// resolveRatio: must be <= rejectionRatio 0.5, got 0.6
}
