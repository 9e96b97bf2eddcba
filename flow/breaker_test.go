package flow

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// The breaker suite: every strategy runs through the same checks on a
// clock.Fake. A strategy case says how to make a good and a bad outcome;
// each is set up so that the outcome sequence good, good, bad, bad sits
// exactly on its boundary (ratios 0.5 = threshold, not > it; error_count 2
// errors < 3) and one more bad outcome opens it.

var errDown = errors.New("dependency down")

type breakerCase struct {
	rule Rule
	// outcome runs one call to completion at the breaker's resource.
	outcome func(t *testing.T, e *Engine, clk *clock.Fake, bad bool, opts ...EntryOption) error
}

// finish exits p after the call: bad is an error, or for slow_ratio a call
// that takes 200ms (slowCall 100ms); a good slow_ratio call takes no time
// (and fails: an error is not what slow_ratio counts).
func finish(p Permit, clk *clock.Fake, slow, bad bool) {
	switch {
	case slow && bad:
		clk.Advance(200 * time.Millisecond)
		p.Exit()
	case slow:
		p.Exit(WithError(errDown))
	case bad:
		p.Exit(WithError(errDown))
	default:
		p.Exit()
	}
}

func breakerCases() []breakerCase {
	base := Rule{ID: "b", Resource: "dep", Algorithm: AlgoCircuitBreaker, MinRequests: 4,
		Window: 10 * time.Second, OpenFor: 5 * time.Second}
	mk := func(s BreakerStrategy, th float64) breakerCase {
		r := base
		r.Strategy, r.Threshold = s, th
		if s == BreakerSlowRatio {
			r.SlowCall = 100 * time.Millisecond
		}
		return breakerCase{rule: r, outcome: func(t *testing.T, e *Engine, clk *clock.Fake, bad bool, opts ...EntryOption) error {
			t.Helper()
			p, err := e.Entry("dep", opts...)
			if err != nil {
				return err
			}
			finish(p, clk, s == BreakerSlowRatio, bad)
			return nil
		}}
	}
	return []breakerCase{mk(BreakerErrorRatio, 0.5), mk(BreakerErrorCount, 3), mk(BreakerSlowRatio, 0.5)}
}

// run makes the outcomes in order; every call must pass.
func (c breakerCase) run(t *testing.T, e *Engine, clk *clock.Fake, bad []bool, opts ...EntryOption) {
	t.Helper()
	for i, b := range bad {
		if err := c.outcome(t, e, clk, b, opts...); err != nil {
			t.Fatalf("outcome %d (bad %v): %v", i, b, err)
		}
	}
}

// refusal enters once and returns the *BlockError, or nil when it passed.
func refusal(t *testing.T, e *Engine, opts ...EntryOption) *BlockError {
	t.Helper()
	p, err := e.Entry("dep", opts...)
	if err == nil {
		p.Exit()
		return nil
	}
	var be *BlockError
	if !errors.As(err, &be) || !errors.Is(err, ErrBlocked) {
		t.Fatalf("Entry: %v, want a *BlockError", err)
	}
	return be
}

var onBoundary = []bool{false, false, true, true}

func forEachStrategy(t *testing.T, f func(t *testing.T, c breakerCase)) {
	for _, c := range breakerCases() {
		t.Run(c.rule.Strategy.String(), func(t *testing.T) { f(t, c) })
	}
}

func TestBreakerBoundaryTable(t *testing.T) {
	// From a fresh breaker: after these outcomes, is it open?
	tests := []struct {
		name string
		bad  []bool
		open bool
	}{
		{"on the boundary", onBoundary, false},
		{"one bad past it", append(append([]bool{}, onBoundary...), true), true},
		{"below minRequests, all bad", []bool{true, true, true}, false},
		{"minRequests reached by a good call", []bool{true, true, true, false}, true},
	}
	forEachStrategy(t, func(t *testing.T, c breakerCase) {
		for _, tt := range tests {
			e, clk := newTestEngine(t, c.rule)
			c.run(t, e, clk, tt.bad)
			be := refusal(t, e)
			if got := be != nil; got != tt.open {
				t.Errorf("%s: open %v, want %v", tt.name, got, tt.open)
			}
		}
	})
}

// tripped returns an engine whose breaker (and flow rules) just opened.
func tripped(t *testing.T, c breakerCase, rules ...Rule) (*Engine, *clock.Fake) {
	t.Helper()
	e, clk := newTestEngine(t, append([]Rule{c.rule}, rules...)...)
	c.run(t, e, clk, []bool{true, true, true, true})
	return e, clk
}

func TestBreakerOpenRefusesWithRetryAfter(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, c breakerCase) {
		e, clk := tripped(t, c)
		clk.Advance(time.Second)
		be := refusal(t, e)
		if be == nil {
			t.Fatal("open breaker let a call through")
		}
		if be.Reason != ReasonBreakerOpen || be.RuleID != "b" || be.Level != LevelGlobal || be.Resource != "dep" {
			t.Fatalf("got %+v", be)
		}
		if want := 4 * time.Second; be.RetryAfter != want {
			t.Fatalf("RetryAfter %v, want %v", be.RetryAfter, want)
		}
		s := e.Snapshot()
		if got := s.Resources[0].Blocked[LevelGlobal]; got != 1 {
			t.Fatalf("blocked %d, want 1", got)
		}
		if b := s.Breakers[0]; b.State != BreakerOpen || b.Transitions[BreakerOpen] != 1 {
			t.Fatalf("snapshot %+v, want open once", b)
		}
	})
}

func TestBreakerHalfOpenAdmitsExactlyProbes(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, c breakerCase) {
		c.rule.Probes = 3
		e, clk := tripped(t, c)
		clk.Advance(c.rule.OpenFor - time.Nanosecond)
		if refusal(t, e) == nil {
			t.Fatal("passed before openFor was up")
		}
		clk.Advance(time.Nanosecond)
		var held []Permit
		for i := 0; i < 3; i++ {
			p, err := e.Entry("dep")
			if err != nil {
				t.Fatalf("probe %d: %v", i, err)
			}
			held = append(held, p)
		}
		if be := refusal(t, e); be == nil || be.RetryAfter != 0 {
			t.Fatalf("a 4th call half-open: %+v, want refused with RetryAfter 0", be)
		}
		if st := e.Snapshot().Breakers[0].State; st != BreakerHalfOpen {
			t.Fatalf("state %v, want half_open", st)
		}
		for _, p := range held {
			finish(p, clk, c.rule.Strategy == BreakerSlowRatio, false)
		}
		if st := e.Snapshot().Breakers[0]; st.State != BreakerClosed || st.Completed != 0 {
			t.Fatalf("after 3 good probes: %+v, want closed with a fresh window", st)
		}
		// Fresh statistics: three bad outcomes are below minRequests now.
		c.run(t, e, clk, []bool{true, true, true})
		if be := refusal(t, e); be != nil {
			t.Fatalf("fresh window: %v", be)
		}
	})
}

func TestBreakerProbeFailureReopens(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, c breakerCase) {
		c.rule.Probes = 2
		e, clk := tripped(t, c)
		clk.Advance(c.rule.OpenFor)
		p1, err1 := e.Entry("dep")
		p2, err2 := e.Entry("dep")
		if err1 != nil || err2 != nil {
			t.Fatalf("probes: %v %v", err1, err2)
		}
		finish(p1, clk, c.rule.Strategy == BreakerSlowRatio, false)
		finish(p2, clk, c.rule.Strategy == BreakerSlowRatio, true)
		be := refusal(t, e)
		if be == nil || be.RetryAfter != c.rule.OpenFor {
			t.Fatalf("after a failed probe: %+v, want refused for openFor %v", be, c.rule.OpenFor)
		}
		if tr := e.Snapshot().Breakers[0].Transitions; tr != [3]uint64{0, 2, 1} {
			t.Fatalf("transitions %v, want [closed 0, open 2, half_open 1]", tr)
		}
	})
}

func TestBreakerPerKeyIndependent(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, c breakerCase) {
		c.rule.Level = LevelUser
		e, clk := newTestEngine(t, c.rule)
		c.run(t, e, clk, []bool{true, true, true, true}, WithUser("bad-tenant"))
		if refusal(t, e, WithUser("bad-tenant")) == nil {
			t.Fatal("the failing tenant's breaker did not open")
		}
		c.run(t, e, clk, []bool{false, true, false}, WithUser("good-tenant"))
		if be := refusal(t, e); be != nil { // no user: user breakers do not apply
			t.Fatalf("call without a user: %v", be)
		}
		s := e.Snapshot().Breakers[0]
		if s.State != BreakerOpen || s.OpenKeys != 1 || s.HalfOpenKeys != 0 {
			t.Fatalf("snapshot %+v, want one open key", s)
		}
	})
}

func TestBreakerOpenTakesNoFlowPermit(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, c breakerCase) {
		quota := Rule{ID: "q", Resource: "dep", Algorithm: AlgoFixedWindow, Limit: 10, Window: time.Hour}
		e, clk := tripped(t, c, quota) // 4 of the hour's 10 used
		for i := 0; i < 50; i++ {
			if be := refusal(t, e); be == nil || be.RuleID != "b" {
				t.Fatalf("call %d: %+v, want refused by the breaker", i, be)
			}
		}
		clk.Advance(c.rule.OpenFor)
		c.run(t, e, clk, []bool{false}) // the probe closes it
		passed := 0
		for refusal(t, e) == nil {
			passed++
		}
		if passed != 5 {
			t.Fatalf("flow rule admitted %d after the breaker closed, want 5 (10 - 4 - the probe)", passed)
		}
	})
}

func TestBreakerFlowRefusalIsNoOutcome(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, c breakerCase) {
		perUser := Rule{ID: "u", Resource: "dep", Level: LevelUser, Algorithm: AlgoFixedWindow, Limit: 1, Window: time.Hour}
		e, clk := tripped(t, c, perUser)
		c.rule.Probes = 1
		if err := c.outcome(t, e, clk, false, WithUser("x")); err == nil {
			t.Fatal("open breaker admitted a call")
		}
		clk.Advance(c.rule.OpenFor)
		c.run(t, e, clk, []bool{false}, WithUser("x")) // the probe; x's only permit
		// Closed again. Open it, wait, and let the flow rule refuse x's probe.
		c.run(t, e, clk, []bool{true, true, true, true})
		if refusal(t, e) == nil {
			t.Fatal("did not reopen")
		}
		clk.Advance(c.rule.OpenFor)
		if be := refusal(t, e, WithUser("x")); be == nil || be.RuleID != "u" {
			t.Fatalf("x half-open: %+v, want refused by the flow rule", be)
		}
		// The probe x did not use is still there for z, and its success closes.
		c.run(t, e, clk, []bool{false}, WithUser("z"))
		if st := e.Snapshot().Breakers[0].State; st != BreakerClosed {
			t.Fatalf("state %v, want closed", st)
		}
	})
}

func TestBreakerStateKeptAcrossReload(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, c breakerCase) {
		other := Rule{ID: "other", Resource: "x", Algorithm: AlgoTokenBucket, Limit: 1}
		e, _ := tripped(t, c)
		if err := e.LoadRules([]Rule{c.rule, other}); err != nil {
			t.Fatal(err)
		}
		if refusal(t, e) == nil {
			t.Fatal("an unchanged breaker forgot it was open across LoadRules")
		}
		changed := c.rule
		changed.OpenFor = time.Minute
		if err := e.LoadRules([]Rule{changed}); err != nil {
			t.Fatal(err)
		}
		if be := refusal(t, e); be != nil {
			t.Fatalf("a changed breaker kept its state: %v", be)
		}
	})
}

func TestBreakerListener(t *testing.T) {
	c := breakerCases()[0]
	var got []BreakerEvent
	clk := clock.NewFake(t0)
	e := NewEngine(WithClock(clk), WithBreakerListener(func(ev BreakerEvent) { got = append(got, ev) }))
	if err := e.LoadRules([]Rule{c.rule}); err != nil {
		t.Fatal(err)
	}
	c.run(t, e, clk, []bool{false, true, true, true})
	clk.Advance(c.rule.OpenFor)
	c.run(t, e, clk, []bool{false})
	want := []struct {
		from, to BreakerState
		measure  float64
	}{{BreakerClosed, BreakerOpen, 0.75}, {BreakerOpen, BreakerHalfOpen, 0}, {BreakerHalfOpen, BreakerClosed, 0}}
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %d", got, len(want))
	}
	for i, w := range want {
		if g := got[i]; g.From != w.from || g.To != w.to || g.Measure != w.measure || g.RuleID != "b" || g.Resource != "dep" {
			t.Errorf("event %d: %+v, want %v -> %v measure %v", i, g, w.from, w.to, w.measure)
		}
	}
	if got[0].Completed != 4 || got[0].Bad != 3 {
		t.Errorf("opening figures %d/%d, want 3 bad of 4", got[0].Bad, got[0].Completed)
	}
}

func TestBreakerWindowSlides(t *testing.T) {
	c := breakerCases()[0]
	e, clk := newTestEngine(t, c.rule)
	c.run(t, e, clk, []bool{true, true, true}) // 3 bad, below minRequests
	clk.Advance(c.rule.Window)                 // out of the window
	c.run(t, e, clk, []bool{true, false, false, false})
	if be := refusal(t, e); be != nil {
		t.Fatalf("old outcomes still counted: %v", be)
	}
	if s := e.Snapshot().Breakers[0]; s.Completed != 5 || s.Bad != 1 {
		t.Fatalf("window %d/%d, want 1 bad of 5", s.Bad, s.Completed)
	}
}

func TestBreakerClosedPassAllocatesNothing(t *testing.T) {
	c := breakerCases()[0]
	c.rule.Threshold = 1 // never opens
	e, _ := newTestEngine(t, c.rule, Rule{ID: "tb", Resource: "dep", Algorithm: AlgoTokenBucket, Limit: 1e9})
	allocs := testing.AllocsPerRun(1000, func() {
		p, err := e.Entry("dep")
		if err != nil {
			t.Fatal(err)
		}
		p.Exit(WithError(errDown))
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per Entry+Exit through a closed breaker, want 0", allocs)
	}
}

func TestGuardFallbackOnRefusal(t *testing.T) {
	c := breakerCases()[0]
	e, clk := tripped(t, c)
	var seen *BlockError
	cached := errors.New("served from cache")
	ran := false
	err := e.Guard(t.Context(), "dep", func(ctxArg context.Context) error { ran = true; return nil },
		WithFallback(func(_ context.Context, be *BlockError) error { seen = be; return cached }))
	if ran || err != cached || seen == nil || seen.RuleID != "b" {
		t.Fatalf("open breaker: fn ran %v, err %v, fallback saw %+v", ran, err, seen)
	}
	// Without a fallback, the *BlockError; a passing call never calls it.
	if err := e.Guard(t.Context(), "dep", func(context.Context) error { return nil }); !errors.Is(err, ErrBlocked) {
		t.Fatalf("no fallback: %v", err)
	}
	clk.Advance(c.rule.OpenFor)
	err = e.Guard(t.Context(), "dep", func(context.Context) error { return nil },
		WithFallback(func(context.Context, *BlockError) error { t.Fatal("fallback on a pass"); return nil }))
	if err != nil {
		t.Fatal(err)
	}
}

func TestBreakerLogsAndReportsKey(t *testing.T) {
	c := breakerCases()[1] // error_count
	c.rule.Level = LevelIP
	var buf strings.Builder
	var keys []string
	clk := clock.NewFake(t0)
	e := NewEngine(WithClock(clk), WithLogger(slog.New(slog.NewTextHandler(&buf, nil))),
		WithBreakerListener(func(ev BreakerEvent) { keys = append(keys, ev.Key+" "+ev.To.String()) }))
	if err := e.LoadRules([]Rule{c.rule}); err != nil {
		t.Fatal(err)
	}
	c.run(t, e, clk, []bool{true, true, true, true}, WithIP("192.0.2.7"))
	if len(keys) != 1 || keys[0] != "192.0.2.7 open" {
		t.Fatalf("events %q, want the IP's breaker opening", keys)
	}
	for _, want := range []string{"flow: circuit breaker open", "rule=b", "key=192.0.2.7", "from=closed", "completed=4", "bad=4", "measure=4"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log %q lacks %q", buf.String(), want)
		}
	}
}

// TestBreakerSuccessAfterSlideOpens: successes past MinRequests in their
// bucket skip the window sum, yet a measure that rose as old successes slid
// out is still caught by the first success of the new bucket.
func TestBreakerSuccessAfterSlideOpens(t *testing.T) {
	c := breakerCases()[0] // error_ratio 0.5, minRequests 4, window 10s in 1s buckets
	e, clk := newTestEngine(t, c.rule)
	c.run(t, e, clk, []bool{false, false, false, false, false, false}) // 6 good in one bucket
	clk.Advance(2 * time.Second)
	c.run(t, e, clk, []bool{true, true, true, true, true}) // 5 bad of 11: closed
	if st := e.Snapshot().Breakers[0].State; st != BreakerClosed {
		t.Fatalf("5 bad of 11: %v", st)
	}
	clk.Advance(8500 * time.Millisecond) // the 6 good slide out: 5 bad of 5
	c.run(t, e, clk, []bool{false})      // 5 bad of 6 > 0.5
	if st := e.Snapshot().Breakers[0]; st.State != BreakerOpen || st.Completed != 6 || st.Bad != 5 {
		t.Fatalf("after the slide: %+v, want open at 5 bad of 6", st)
	}
}
