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

// TestAllocationsManyRules: past the four limiters entryState holds, the
// taken limiters spill to a buffer the call's Permit lends (entryState.take),
// so a resource with many rules allocates nothing once warmed, whether the
// call passes or the last rule refuses it (TestManyRulesGiveBack checks
// that what was taken comes back).
func TestAllocationsManyRules(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumented builds allocate")
	}
	for _, n := range []int{5, 10, 32} {
		var rules []Rule
		for i := range n {
			rules = append(rules, Rule{ID: "g" + strconv.Itoa(i), Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1e9})
		}
		// The last rule of "b" refuses every call but the first.
		for i := range n {
			r := Rule{ID: "b" + strconv.Itoa(i), Resource: "b", Algorithm: AlgoFixedWindow, Limit: 1e9}
			if i == n-1 {
				r.Limit, r.Window = 1, time.Hour
			}
			rules = append(rules, r)
		}
		e, _ := newTestEngine(t, rules...)
		pass := func() {
			p, err := e.Entry("r")
			if err != nil {
				t.Fatal(err)
			}
			p.Exit()
		}
		for range 10 {
			pass()
		}
		if a := testing.AllocsPerRun(1000, pass); a != 0 {
			t.Errorf("%d rules, pass: %v allocs per call, want 0", n, a)
		}
		try(t, e, "b")
		blocked := func() {
			if d := e.Decide("b"); d.Allowed {
				t.Fatal("passed")
			}
		}
		blocked()
		if a := testing.AllocsPerRun(1000, blocked); a != 0 {
			t.Errorf("%d rules, refused by the last: %v allocs per call, want 0", n, a)
		}
	}
}

// TestManyRulesGiveBack: a call refused by the last of many rules gives
// back what the others took, spilled ones included.
func TestManyRulesGiveBack(t *testing.T) {
	const n = 9
	var rules []Rule
	for i := range n - 1 {
		rules = append(rules, Rule{ID: "w" + strconv.Itoa(i), Resource: "r", Algorithm: AlgoFixedWindow, Limit: 2, Window: time.Hour})
	}
	rules = append(rules, Rule{ID: "last", Resource: "r", Algorithm: AlgoConcurrency, Limit: 1})
	e, _ := newTestEngine(t, rules...)
	held, err := e.Entry("r") // one of each window's 2, and the one slot
	if err != nil {
		t.Fatal(err)
	}
	for range 5 { // refused by "last": each gives its 8 back
		if got := try(t, e, "r"); got != "last" {
			t.Fatalf("got %q, want refused by last", got)
		}
	}
	held.Exit()
	// One permit left in every window: one more call passes, then the
	// windows refuse.
	if got := try(t, e, "r"); got != "" {
		t.Fatalf("got refused by %q, want a pass", got)
	}
	if got := try(t, e, "r"); got != "w0" {
		t.Fatalf("got %q, want refused by w0", got)
	}
}
