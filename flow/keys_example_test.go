package flow_test

import (
	"fmt"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// Who is being refused, and giving one user a fresh start.
func ExampleEngine_TopKeys() {
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	_ = eng.LoadRules([]flow.Rule{{ID: "per-user", Resource: "GET /orders", Level: flow.LevelUser,
		Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Hour}})
	for _, u := range []string{"alice", "alice", "alice", "bob", "bob"} {
		if p, err := eng.Entry("GET /orders", flow.WithUser(u)); err == nil {
			p.Exit()
		}
	}
	for _, rt := range eng.TopKeys(10) {
		for _, k := range rt.Keys {
			fmt.Printf("%s: %s refused %d\n", rt.RuleID, k.Key, k.Refused)
		}
	}
	held, _ := eng.ResetKey("per-user", "alice")
	ks, _ := eng.InspectKey("per-user", "alice")
	fmt.Println("reset alice:", held, "tracked now:", ks.Tracked, "remaining:", ks.Remaining)
	// Output:
	// per-user: alice refused 2
	// per-user: bob refused 1
	// reset alice: true tracked now: false remaining: 1
}
