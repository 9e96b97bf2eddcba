package flow

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestRefusersShared: every kind of refusal names its rule through a
// Refuser the rule made when it loaded, the same one each time, so a
// refused Entry allocates its BlockError alone: one object of at most
// 64 bytes. (Only the system guard's refusal of a resource without rules
// describes itself per call.)
func TestRefusersShared(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	down := &fakeTokenServer{err: ErrTokenServerUnavailable, instances: 1}
	full := &fakeTokenServer{res: TokenResult{Allowed: false, Refused: 0}, instances: 1}
	ref := fw("ref", "write", LevelGlobal, 1, time.Hour)
	ref.RefResource = "read"
	cases := []struct {
		name   string
		ts     TokenServer
		rules  []Rule
		before func(e *Engine) // brings the rule to refusing
		res    string
		opts   []EntryOption
		rule   string
		reason string
	}{
		{name: "rate", rules: []Rule{fw("g", "r", LevelGlobal, 1, time.Hour)}, res: "r", rule: "g", reason: ReasonRateLimited},
		{name: "user rate", rules: []Rule{fw("u", "r", LevelUser, 1, time.Hour)}, res: "r", opts: []EntryOption{WithUser("a")}, rule: "u", reason: ReasonRateLimited},
		{name: "concurrency", rules: []Rule{{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 1}}, res: "r", rule: "c", reason: ReasonConcurrency},
		{name: "priority", rules: []Rule{{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 2}}, res: "r",
			opts: []EntryOption{WithPriority(PriorityLow)}, rule: "c", reason: ReasonPriority},
		{name: "deny list", rules: []Rule{{ID: "d", Resource: "r", Level: LevelUser, Algorithm: AlgoDeny, Values: []string{"a"}}},
			res: "r", opts: []EntryOption{WithUser("a")}, rule: "d", reason: ReasonDenied},
		{name: "allow list", rules: []Rule{{ID: "l", Resource: "r", Level: LevelUser, Algorithm: AlgoAllow, Values: []string{"b"}}},
			res: "r", opts: []EntryOption{WithUser("a")}, rule: "l", reason: ReasonNotAllowed},
		{name: "wait cancelled", rules: []Rule{{ID: "lb", Resource: "r", Algorithm: AlgoLeakyBucket, Limit: 1, MaxWait: 5 * time.Second}},
			res: "r", opts: []EntryOption{WithContext(cancelled)}, rule: "lb", reason: ReasonWaitCancelled},
		{name: "related resource", rules: []Rule{ref}, before: func(e *Engine) { e.Entry("read") },
			res: "write", rule: "ref", reason: ReasonRefResourceHot},
		{name: "cluster limited", ts: full, rules: []Rule{cfw("cl", LevelGlobal, 10, "global", "deny")}, res: "r", rule: "cl", reason: ReasonClusterLimited},
		{name: "cluster unavailable", ts: down, rules: []Rule{cfw("cu", LevelGlobal, 10, "global", "deny")}, res: "r", rule: "cu", reason: ReasonClusterUnavailable},
		{name: "retry budget", rules: []Rule{{ID: "rb", Resource: "r", Algorithm: AlgoRetryBudget, MinPerSecond: 1e-9}},
			res: "r", opts: []EntryOption{WithRetry()}, rule: "rb", reason: ReasonRetryBudget},
		{name: "system guard", rules: []Rule{fw("g", "r", LevelGlobal, 1e9, time.Hour)},
			before: func(e *Engine) { e.SetSystemLimit(1); e.Entry("r") }, res: "r", reason: ReasonSystemOverload},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := clusterEngine(t, c.ts, c.rules...)
			if c.before != nil {
				c.before(e)
			}
			e.Entry(c.res, c.opts...) // takes the last permit, if any
			refuse := func() *BlockError {
				_, err := e.Entry(c.res, c.opts...)
				var be *BlockError
				if !errors.As(err, &be) || be.Refuser == nil || be.RuleID != c.rule || be.Reason != c.reason || be.Resource != c.res {
					t.Fatalf("Entry(%q) = %v, want refused by %q for %q", c.res, err, c.rule, c.reason)
				}
				return be
			}
			first := refuse()
			if next := refuse(); next.Refuser != first.Refuser {
				t.Fatalf("two refusals by %q: Refusers %p and %p, want one shared", c.rule, first.Refuser, next.Refuser)
			}
			if c.rule != "" && first.Window != c.rules[0].WithDefaults().Window {
				t.Fatalf("Window %v, want the rule's %v", first.Window, c.rules[0].WithDefaults().Window)
			}
			if c.rule == "" && first.Level != LevelSystem {
				t.Fatalf("Level %v, want LevelSystem", first.Level)
			}
			if testing.CoverMode() != "" || raceEnabled || c.ts != nil {
				return // instrumented builds allocate, and so does the fake token server
			}
			var err error
			entry := func() { _, err = e.Entry(c.res, c.opts...) }
			if objs, bytes := allocated(1000, entry); err == nil || objs > 1 || bytes > 64 {
				t.Fatalf("a refusal allocates %d objects, %d bytes; want 1 of at most 64", objs, bytes)
			}
		})
	}
}

// TestSystemGuardUnruled: the system guard refuses a resource without
// rules with a Refuser made for the call, naming that resource: two
// allocations, the one refusal that makes more than one.
func TestSystemGuardUnruled(t *testing.T) {
	e, _ := newTestEngine(t)
	e.SetSystemLimit(1)
	p, err := e.Entry("a")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Exit()
	_, err = e.Entry("b")
	var be *BlockError
	if !errors.As(err, &be) || be.Resource != "b" || be.Level != LevelSystem || be.Reason != ReasonSystemOverload || be.RuleID != "" {
		t.Fatalf("Entry(b) = %v, want refused by the system guard", err)
	}
	if testing.CoverMode() != "" || raceEnabled {
		return // instrumented builds allocate
	}
	entry := func() { _, err = e.Entry("b") }
	if objs, _ := allocated(1000, entry); err == nil || objs != 2 {
		t.Fatalf("the guard's refusal of a resource without rules allocates %d objects, want 2 (the BlockError and its Refuser)", objs)
	}
}

// TestBlockErrorByHand: a BlockError made without a Refuser still
// describes itself, and an admitted Decision's Block reads as zero.
func TestBlockErrorByHand(t *testing.T) {
	if got := (&BlockError{}).Error(); got != ErrBlocked.Error() {
		t.Fatalf("zero BlockError: %q", got)
	}
	e, _ := newTestEngine(t)
	d := e.Decide("free")
	if !d.Allowed || d.Block.Reason != "" || d.Block.RuleID != "" || d.Block.Level != 0 {
		t.Fatalf("admitted Decision: %+v", d)
	}
}

// allocated is what f allocates per run, in objects and bytes, after one
// warm-up run; like testing.AllocsPerRun, it rounds down, so that a rare
// allocation elsewhere in the process is not charged to f.
func allocated(runs uint64, f func()) (objs, bytes uint64) {
	f()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.Mallocs - before.Mallocs) / runs, (after.TotalAlloc - before.TotalAlloc) / runs
}
