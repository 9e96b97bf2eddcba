package flow

import (
	"strconv"
	"testing"
	"time"
)

// TestAllocations pins the allocation budget of the hot paths: nothing on a
// pass (options, permit, statistics included), one *BlockError on a refused
// Entry, nothing on a refused Decide.
func TestAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumented builds allocate")
	}
	e, clk := newTestEngine(t,
		Rule{ID: "ip", Resource: "r", Level: LevelIP, Algorithm: AlgoTokenBucket, Limit: 1e9},
		Rule{ID: "user", Resource: "r", Level: LevelUser, Algorithm: AlgoSlidingWindow, Limit: 1e8},
		Rule{ID: "g", Resource: "r", Algorithm: AlgoFixedWindow, Limit: 1e9},
		Rule{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 1e6},
		Rule{ID: "tight", Resource: "t", Algorithm: AlgoFixedWindow, Limit: 1, Window: time.Hour},
		Rule{ID: "u1", Resource: "t2", Level: LevelUser, Algorithm: AlgoFixedWindow, Limit: 1, Window: time.Hour},
		Rule{ID: "g2", Resource: "t2", Algorithm: AlgoConcurrency, Limit: 10},
	)
	users := make([]string, 100)
	for i := range users {
		users[i] = "user-" + strconv.Itoa(i)
	}
	i := 0
	pass := func() {
		p, err := e.Entry("r", WithUser(users[i%100]), WithIP(users[(i+7)%100]), WithTokens(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.Quota(); !ok {
			t.Fatal("no quota")
		}
		p.Exit(WithError(nil))
		i++
		clk.Advance(time.Millisecond) // bucket turnovers included
	}
	for range 200 { // track every key first: steady state
		pass()
	}
	if n := testing.AllocsPerRun(1000, pass); n != 0 {
		t.Errorf("pass (four rules, three levels): %v allocs per call, want 0", n)
	}
	try(t, e, "t")
	blocked := func() {
		if _, err := e.Entry("t"); err == nil {
			t.Fatal("passed")
		}
	}
	if n := testing.AllocsPerRun(1000, blocked); n > 1 {
		t.Errorf("blocked: %v allocs per call, want <= 1", n)
	}
	// Decide refuses without allocating, on the general path (t2 has a
	// user and a global rule) and on the single-rule path.
	e.Decide("t2", WithUser("u")).Permit.Exit()
	decideBlocked := func() {
		if d := e.Decide("t2", WithUser("u")); d.Allowed || d.Block.RuleID != "u1" {
			t.Fatalf("got %+v, want refused by rule u1", d)
		}
	}
	if n := testing.AllocsPerRun(1000, decideBlocked); n != 0 {
		t.Errorf("Decide blocked (two levels): %v allocs per call, want 0", n)
	}
	single := NewEngine(WithClock(clk))
	if err := single.LoadRules([]Rule{{ID: "s", Resource: "s", Algorithm: AlgoFixedWindow, Limit: 1, Window: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	single.Decide("s").Permit.Exit()
	decideSingle := func() {
		if d := single.Decide("s"); d.Allowed || d.Block.RuleID != "s" {
			t.Fatalf("got %+v, want refused by rule s", d)
		}
	}
	if n := testing.AllocsPerRun(1000, decideSingle); n != 0 {
		t.Errorf("Decide blocked (single rule): %v allocs per call, want 0", n)
	}
	noRule := func() {
		p, _ := e.Entry("none", WithUser("u"))
		p.Exit()
	}
	if n := testing.AllocsPerRun(1000, noRule); n != 0 {
		t.Errorf("no rule: %v allocs per call, want 0", n)
	}
}
