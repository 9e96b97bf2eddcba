package flow

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newTestEngine(t *testing.T, rules ...Rule) (*Engine, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	e := NewEngine(WithClock(clk))
	if err := e.LoadRules(rules); err != nil {
		t.Fatalf("LoadRules: %v", err)
	}
	return e, clk
}

// try enters and exits at once; it returns "" on pass or the refusing rule id.
func try(t *testing.T, e *Engine, res string, opts ...EntryOption) string {
	t.Helper()
	p, err := e.Entry(res, opts...)
	if err != nil {
		var be *BlockError
		if !errors.As(err, &be) || !errors.Is(err, ErrBlocked) {
			t.Fatalf("Entry: got %v, want a *BlockError", err)
		}
		if p != (Permit{}) {
			t.Fatalf("Entry returned a permit with an error")
		}
		return be.RuleID
	}
	p.Exit()
	return ""
}

func seq(t *testing.T, e *Engine, res string, n int, opts ...EntryOption) string {
	t.Helper()
	var out []string
	for range n {
		id := try(t, e, res, opts...)
		if id == "" {
			id = "pass"
		}
		out = append(out, id)
	}
	return strings.Join(out, " ")
}

func fw(id, res string, lvl Level, limit float64, window time.Duration) Rule {
	return Rule{ID: id, Resource: res, Level: lvl, Algorithm: AlgoFixedWindow, Limit: limit, Window: window}
}

func TestNoRulePasses(t *testing.T) {
	e, _ := newTestEngine(t, fw("g", "other", LevelGlobal, 1, time.Second))
	for range 5 {
		p, err := e.Entry("free")
		if err != nil {
			t.Fatalf("Entry(free): %v", err)
		}
		if _, ok := p.Quota(); ok {
			t.Fatalf("Quota: got ok for a resource with no rule")
		}
		p.Exit()
	}
	if got := e.InFlight(); got != 0 {
		t.Fatalf("InFlight: got %d, want 0", got)
	}
}

func TestRefundAcrossLevels(t *testing.T) {
	e, _ := newTestEngine(t,
		fw("ip", "r", LevelIP, 3, time.Minute),
		fw("user", "r", LevelUser, 1, time.Minute),
		fw("global", "r", LevelGlobal, 100, time.Minute),
	)
	x := WithIP("10.0.0.1")
	// a passes; a again is refused by the user rule and its ip token comes
	// back, so b and c still fit under the ip limit of 3; d does not.
	got := []string{
		try(t, e, "r", x, WithUser("a")),
		try(t, e, "r", x, WithUser("a")),
		try(t, e, "r", x, WithUser("b")),
		try(t, e, "r", x, WithUser("c")),
		try(t, e, "r", x, WithUser("d")),
	}
	want := []string{"", "user", "", "", "ip"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %q, want %q", got, want)
	}
	// The global rule saw exactly the 3 calls that passed.
	if r := testRemaining(ruleAt(e, LevelGlobal).global, 0); r != 97 {
		t.Fatalf("global remaining: got %v, want 97", r)
	}
	st := e.Snapshot().Resources[0]
	if st.Passed != 3 || st.Blocked[LevelUser] != 1 || st.Blocked[LevelIP] != 1 {
		t.Fatalf("stats: got passed %d blocked %v", st.Passed, st.Blocked)
	}
}

func TestGlobalRefusalRefundsKeyedLevels(t *testing.T) {
	e, clk := newTestEngine(t,
		fw("ip", "r", LevelIP, 2, time.Minute),
		fw("global", "r", LevelGlobal, 1, time.Second),
	)
	x := WithIP("10.0.0.1")
	if got, want := seq(t, e, "r", 3, x), "pass global global"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	clk.Advance(time.Second)
	// The ip rule gave back both refused tokens: one more call fits (without
	// the refunds the ip rule would already be spent).
	if got, want := seq(t, e, "r", 2, x), "pass ip"; got != want {
		t.Fatalf("after 1s: got %q, want %q", got, want)
	}
	clk.Advance(time.Second)
	if got, want := seq(t, e, "r", 1, x), "ip"; got != want {
		t.Fatalf("after 2s: got %q, want %q", got, want)
	}
}

func TestSeveralRulesAtOneLevel(t *testing.T) {
	e, clk := newTestEngine(t,
		fw("per-minute", "r", LevelUser, 3, time.Minute),
		fw("per-second", "r", LevelUser, 2, time.Second),
	)
	u := WithUser("u")
	if got, want := seq(t, e, "r", 3, u), "pass pass per-second"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	clk.Advance(time.Second)
	// per-minute gave back the token per-second refused: one more fits.
	if got, want := seq(t, e, "r", 2, u), "pass per-minute"; got != want {
		t.Fatalf("after 1s: got %q, want %q", got, want)
	}
	// Another user has its own limiters.
	if got, want := seq(t, e, "r", 1, WithUser("v")), "pass"; got != want {
		t.Fatalf("user v: got %q, want %q", got, want)
	}
	// No user: user rules do not apply.
	if got, want := seq(t, e, "r", 5), "pass pass pass pass pass"; got != want {
		t.Fatalf("no user: got %q, want %q", got, want)
	}
}

func TestWithTokens(t *testing.T) {
	e, _ := newTestEngine(t, fw("g", "r", LevelGlobal, 5, time.Second), fw("u", "r", LevelUser, 4, time.Second))
	if got := try(t, e, "r", WithTokens(3), WithUser("a")); got != "" {
		t.Fatalf("3 tokens: refused by %q", got)
	}
	if got := try(t, e, "r", WithTokens(2), WithUser("a")); got != "u" {
		t.Fatalf("2 more tokens for a: got %q, want u", got)
	}
	if got := try(t, e, "r", WithTokens(2), WithUser("b")); got != "" {
		t.Fatalf("2 tokens for b: refused by %q", got)
	}
	if got := try(t, e, "r", WithUser("b")); got != "g" {
		t.Fatalf("global exhausted: got %q, want g", got)
	}
}

func TestBlockErrorFields(t *testing.T) {
	e, clk := newTestEngine(t, fw("g", "r", LevelGlobal, 2, 10*time.Second))
	try(t, e, "r")
	try(t, e, "r")
	clk.Advance(4 * time.Second)
	_, err := e.Entry("r")
	var be *BlockError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want *BlockError", err)
	}
	if be.Resource != "r" || be.Level != LevelGlobal || be.RuleID != "g" || be.Reason != ReasonRateLimited ||
		be.Limit != 2 || be.Window != 10*time.Second || be.Remaining != 0 || be.Never {
		t.Fatalf("got %+v", *be)
	}
	if be.RetryAfter != 6*time.Second {
		t.Fatalf("RetryAfter: got %v, want 6s (the window's end)", be.RetryAfter)
	}
	if !strings.Contains(be.Error(), `"g"`) {
		t.Fatalf("Error() does not name the rule: %s", be.Error())
	}
	// More tokens than the window can ever hold.
	_, err = e.Entry("r", WithTokens(3))
	if !errors.As(err, &be) || !be.Never || be.RetryAfter != Never {
		t.Fatalf("3 tokens of a 2-limit: got %+v, want Never", err)
	}
}

func TestPermitExitIdempotentAndQuota(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 1})
	p, err := e.Entry("r")
	if err != nil {
		t.Fatal(err)
	}
	q, ok := p.Quota()
	if !ok || q.RuleID != "c" || q.Limit != 1 || q.Remaining != 0 {
		t.Fatalf("Quota: got %+v %v", q, ok)
	}
	if try(t, e, "r") != "c" {
		t.Fatal("second in flight passed a concurrency limit of 1")
	}
	clk.Advance(time.Millisecond)
	p.Exit()
	p.Exit() // no-op: the permit was already exited and not yet reused
	var nilPermit Permit
	nilPermit.Exit()
	st := e.Snapshot().Resources[0]
	if st.Completed != 1 || st.InFlight != 0 || st.RTSum != time.Millisecond {
		t.Fatalf("after double Exit: completed %d in flight %d rt %v", st.Completed, st.InFlight, st.RTSum)
	}
	if try(t, e, "r") != "" {
		t.Fatal("concurrency permit not released by Exit")
	}
}

func TestSystemLimit(t *testing.T) {
	e, _ := newTestEngine(t)
	e.SetSystemLimit(2)
	p1, _ := e.Entry("a")
	p2, _ := e.Entry("b")
	_, err := e.Entry("c")
	var be *BlockError
	if !errors.As(err, &be) || be.Level != LevelSystem || be.Reason != ReasonSystemOverload {
		t.Fatalf("third call: got %v, want a system block", err)
	}
	p1.Exit()
	if _, err := e.Entry("c"); err != nil {
		t.Fatalf("after an Exit: %v", err)
	}
	p2.Exit()
	e.SetSystemLimit(0)
	for range 5 {
		if _, err := e.Entry("d"); err != nil {
			t.Fatalf("guard off: %v", err)
		}
	}
}

func TestAdaptiveFactorAppliedLazily(t *testing.T) {
	e, clk := newTestEngine(t,
		Rule{ID: "a", Resource: "r", Algorithm: AlgoFixedWindow, Limit: 10, Adaptive: true},
		Rule{ID: "u", Resource: "r", Level: LevelUser, Algorithm: AlgoFixedWindow, Limit: 4, Adaptive: true},
		Rule{ID: "fixed", Resource: "s", Algorithm: AlgoFixedWindow, Limit: 10},
	)
	e.SetAdaptiveFactor(0.5)
	if got := e.AdaptiveFactor(); got != 0.5 {
		t.Fatalf("AdaptiveFactor: got %v", got)
	}
	passes := func(res string, n int, opts ...EntryOption) int {
		c := 0
		for range n {
			if try(t, e, res, opts...) == "" {
				c++
			}
		}
		return c
	}
	if got := passes("r", 20); got != 5 {
		t.Fatalf("adaptive global at 0.5: %d passed, want 5", got)
	}
	if got := passes("s", 20); got != 10 {
		t.Fatalf("non-adaptive: %d passed, want 10", got)
	}
	clk.Advance(time.Second)
	if got := passes("r", 20, WithUser("x")); got != 2 {
		t.Fatalf("adaptive user at 0.5: %d passed, want 2", got)
	}
	for _, rs := range e.Snapshot().Rules {
		want := map[string]float64{"a": 5, "u": 2, "fixed": 10}[rs.ID]
		if rs.EffectiveLimit != want {
			t.Fatalf("rule %s: effective limit %v, want %v", rs.ID, rs.EffectiveLimit, want)
		}
	}
	e.SetAdaptiveFactor(7) // the idle-CPU boost: a limit of 70
	clk.Advance(time.Second)
	if got := passes("r", 20); got != 20 {
		t.Fatalf("factor 7: %d passed, want 20", got)
	}
	e.SetAdaptiveFactor(1)
	clk.Advance(time.Second)
	if got := passes("r", 20); got != 10 {
		t.Fatalf("factor back to 1: %d passed, want 10", got)
	}
}

func TestMaxWaitQueuesAndCancelRefunds(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "lb", Resource: "r", Algorithm: AlgoLeakyBucket, Limit: 1, MaxWait: 5 * time.Second})
	p, err := e.Entry("r")
	if err != nil || p.Waited() != 0 {
		t.Fatalf("first: %v waited %v", err, p.Waited())
	}
	p.Exit()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := clk.Now()
	_, err = e.Entry("r", WithContext(ctx))
	var be *BlockError
	if !errors.As(err, &be) || be.Reason != ReasonWaitCancelled || !errors.Is(err, context.Canceled) || !errors.Is(err, ErrBlocked) {
		t.Fatalf("cancelled wait: got %v", err)
	}
	if clk.Now() != start {
		t.Fatalf("a cancelled wait moved the clock by %v", clk.Now().Sub(start))
	}
	// The cancelled call gave its slot back: the next one waits 1s, not 2s.
	p, err = e.Entry("r", WithContext(context.Background()))
	if err != nil || p.Waited() != time.Second {
		t.Fatalf("after cancel: err %v waited %v, want 1s", err, p.Waited())
	}
	p.Exit()
	st := e.Snapshot().Resources[0]
	if st.Waited != 1 || st.WaitSum != time.Second || st.Blocked[LevelGlobal] != 1 {
		t.Fatalf("stats: waited %d waitSum %v blocked %v", st.Waited, st.WaitSum, st.Blocked)
	}
	// Passed, Waited and Blocked partition the three calls, as the metrics'
	// result label does: the waited call is not also passed.
	if st.Passed != 1 || st.Admitted() != 2 || st.InFlight != 0 {
		t.Fatalf("stats: passed %d admitted %d in flight %d, want 1 2 0", st.Passed, st.Admitted(), st.InFlight)
	}
}

func nan() float64 { z := 0.0; return z / z }

func TestSystemLimitConcurrent(t *testing.T) {
	e, _ := newTestEngine(t, fw("g", "r", LevelGlobal, 1e6, time.Minute))
	e.SetSystemLimit(10)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				res := "r"
				if (g+i)%2 == 0 {
					res = "no-rule"
				}
				if _, err := e.Entry(res); err == nil { // held: never exits
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 10 || e.InFlight() != 10 {
		t.Fatalf("admitted %d, in flight %d, want 10 and 10", admitted.Load(), e.InFlight())
	}
}

// ruleAt is the last compiled rule in force at level l.
func ruleAt(e *Engine, l Level) *compiledRule {
	var cr *compiledRule
	for _, x := range e.rules.Load().compiled {
		if x.rule.Level == l {
			cr = x
		}
	}
	return cr
}
