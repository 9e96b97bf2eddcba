package flow_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

func ExampleEngine_Entry() {
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Unix(0, 0))))
	err := eng.LoadRules([]flow.Rule{{
		ID: "orders-per-user", Resource: "GET /orders", Level: flow.LevelUser,
		Algorithm: flow.AlgoFixedWindow, Limit: 2, Window: time.Minute,
	}})
	if err != nil {
		panic(err)
	}
	for i := 1; i <= 3; i++ {
		p, err := eng.Entry("GET /orders", flow.WithUser("alice"))
		if err != nil {
			var be *flow.BlockError
			errors.As(err, &be)
			fmt.Printf("call %d: blocked by %s at %s level, retry after %v\n", i, be.RuleID, be.Level, be.RetryAfter)
			continue
		}
		fmt.Printf("call %d: passed\n", i)
		p.Exit()
	}
	// Output:
	// call 1: passed
	// call 2: passed
	// call 3: blocked by orders-per-user at user level, retry after 1m0s
}

func ExampleEngine_Decide() {
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Unix(0, 0))))
	err := eng.LoadRules([]flow.Rule{{
		ID: "search", Resource: "GET /search", Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Second,
	}})
	if err != nil {
		panic(err)
	}
	for i := 1; i <= 2; i++ {
		d := eng.Decide("GET /search")
		if !d.Allowed { // d.Block is the refusal, by value: nothing allocated
			fmt.Printf("call %d: %s by %s, retry after %v\n", i, d.Block.Reason, d.Block.RuleID, d.Block.RetryAfter)
			continue
		}
		fmt.Printf("call %d: passed\n", i)
		d.Permit.Exit()
	}
	// Output:
	// call 1: passed
	// call 2: rate limited by search, retry after 1s
}

func ExampleEngine_Guard() {
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Unix(0, 0))))
	if err := eng.LoadRules([]flow.Rule{{ID: "db", Resource: "db", Algorithm: flow.AlgoConcurrency, Limit: 1}}); err != nil {
		panic(err)
	}
	err := eng.Guard(context.Background(), "db", func(ctx context.Context) error {
		// While this runs, the one permit is taken.
		inner := eng.Guard(ctx, "db", func(context.Context) error { return nil })
		fmt.Println("nested call:", errors.Is(inner, flow.ErrBlocked))
		return errors.New("query failed")
	})
	fmt.Println("guard:", err)
	s := eng.Snapshot().Resources[0]
	fmt.Println("completed:", s.Completed, "errors:", s.Errors, "blocked:", s.Blocked[flow.LevelGlobal])
	// Output:
	// nested call: true
	// guard: query failed
	// completed: 1 errors: 1 blocked: 1
}

func ExampleEngine_LoadRules() {
	eng := flow.NewEngine()
	err := eng.LoadRules([]flow.Rule{
		{ID: "ok", Resource: "a", Limit: 10},
		{ID: "bad", Resource: "b", Algorithm: flow.AlgoSlidingWindow, Limit: 0, Buckets: -1},
	})
	fmt.Println(err)
	fmt.Println("rules in force:", len(eng.Rules()))
	// Output:
	// rules[1] (id "bad"): limit: must be > 0, not 0
	// rules[1] (id "bad"): buckets: must be in [1, 3600], not -1
	// rules in force: 0
}

// A concurrency limit of 4 with the default reserve: low-priority calls may
// fill half of it, so a critical call still gets in when low work piles up.
func ExampleWithPriority() {
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Unix(0, 0))))
	if err := eng.LoadRules([]flow.Rule{{ID: "db", Resource: "query", Algorithm: flow.AlgoConcurrency, Limit: 4}}); err != nil {
		panic(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := eng.Entry("query", flow.WithPriority(flow.PriorityLow)); err != nil {
			var be *flow.BlockError
			errors.As(err, &be)
			fmt.Printf("low %d: %s\n", i, be.Reason)
			continue
		}
		fmt.Printf("low %d: passed\n", i)
	}
	if _, err := eng.Entry("query", flow.WithPriority(flow.PriorityCritical)); err == nil {
		fmt.Println("critical: passed")
	}
	// Output:
	// low 1: passed
	// low 2: passed
	// low 3: shed for priority
	// critical: passed
}
