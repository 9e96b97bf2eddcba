package flow

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// The shadow suite: every rule runs twice on one engine and one clock.Fake,
// once enforcing on resource "enf" and once in shadow on "sh", and both are
// fed the same trace. At every call the shadow copy must let the call
// through, and count a would-be refusal exactly when the enforcing copy
// refused it.
//
// Each resource also has an enforcing user-level rule, checked after the
// ip-level rule under test, that refuses the user "spent" and admits every
// other (fresh) user: so the rule under test sees its permits given back
// when a later level refuses, on both resources alike, while that later
// rule's decisions do not depend on what the rule under test did.

const (
	ruleUnderTest = "under-test"
	laterRule     = "later"
	spent         = "spent"
)

func shadowPair(r Rule) []Rule {
	later := Rule{ID: laterRule, Level: LevelUser, Algorithm: AlgoFixedWindow, Limit: 1, Window: time.Hour}
	var out []Rule
	for _, res := range []string{"enf", "sh"} {
		x, l := r, later
		x.ID, x.Resource, x.Level, x.Shadow = res+"-"+ruleUnderTest, res, LevelIP, res == "sh"
		l.ID, l.Resource = res+"-"+laterRule, res
		out = append(out, x, l)
	}
	return out
}

// shadowCount reads rule id's would-be refusals (RuleStats.ShadowBlocked)
// without building a Snapshot: the suites read it twice per call.
func shadowCount(e *Engine, id string) uint64 {
	for _, cr := range e.rules.Load().compiled {
		if cr.rule.ID == id {
			return cr.shadowBlocked.Load()
		}
	}
	return 0
}

func TestShadowCountsExactlyTheEnforcingRefusals(t *testing.T) {
	cases := []Rule{
		{Algorithm: AlgoTokenBucket, Limit: 5, Burst: 3},
		{Algorithm: AlgoFixedWindow, Limit: 4},
		{Algorithm: AlgoSlidingWindow, Limit: 4},
		{Algorithm: AlgoSlidingLog, Limit: 4},
		{Algorithm: AlgoLeakyBucket, Limit: 5},
		{Algorithm: AlgoWarmUp, Limit: 5, Warmup: 2 * time.Second},
		{Algorithm: AlgoConcurrency, Limit: 3},
		{Algorithm: AlgoConcurrency, Limit: 6, Reserve: &Reserve{High: 0.2, Normal: 0.4}},
		{Algorithm: AlgoAdaptiveConcurrency, InitialLimit: 3, MinLimit: 1, MaxLimit: 8},
	}
	for _, c := range cases {
		name := c.Algorithm.String()
		if c.Reserve != nil {
			name += "_reserve"
		}
		t.Run(name, func(t *testing.T) {
			e, clk := newTestEngine(t, shadowPair(c)...)
			// Spend the "spent" user's one call at the later rule on both.
			for _, res := range []string{"enf", "sh"} {
				p, err := e.Entry(res, WithUser(spent))
				if err != nil {
					t.Fatal(err)
				}
				p.Exit()
			}
			rng := rand.New(rand.NewPCG(1, 2))
			type held struct{ enf, sh Permit }
			var inFlight []held
			var enfRefused, shRefused, laterRefused int
			calls := 3000
			if raceEnabled {
				calls = 600 // the race detector makes each call ~20x slower
			}
			for i := range calls {
				clk.Advance(time.Duration(rng.IntN(120)) * time.Millisecond)
				user := "u" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
				if rng.IntN(4) == 0 {
					user = spent
				}
				// Priorities too: a concurrency rule's reserve sheds by class.
				opts := []EntryOption{WithIP("10.0.0.1"), WithUser(user), WithPriority(Priority(rng.IntN(4) - 1))}
				pe, errE := e.Entry("enf", opts...)
				before := shadowCount(e, "sh-"+ruleUnderTest)
				ps, errS := e.Entry("sh", opts...)
				counted := shadowCount(e, "sh-"+ruleUnderTest) - before

				var be *BlockError
				byRule := errors.As(errE, &be) && be.RuleID == "enf-"+ruleUnderTest
				if byRule {
					enfRefused++
				}
				if (counted == 1) != byRule || counted > 1 {
					t.Fatalf("call %d: shadow counted %d, enforcing refused by the rule: %v (%v)", i, counted, byRule, errE)
				}
				shRefused += int(counted)
				// The shadow resource refuses only what the later rule refuses.
				if wantErr := user == spent; (errS != nil) != wantErr {
					t.Fatalf("call %d (user %s): shadow resource err %v, want refused %v", i, user, errS, wantErr)
				}
				if errS != nil {
					laterRefused++
				}
				inFlight = append(inFlight, held{pe, ps})
				// Calls end out of order, some at once, some later.
				for len(inFlight) > 0 && rng.IntN(3) > 0 {
					j := rng.IntN(len(inFlight))
					inFlight[j].enf.Exit()
					inFlight[j].sh.Exit()
					inFlight = append(inFlight[:j], inFlight[j+1:]...)
				}
			}
			if enfRefused == 0 || laterRefused == 0 || enfRefused == calls {
				t.Fatalf("trace did not exercise the rule: %d refused by it, %d by the later rule", enfRefused, laterRefused)
			}
			if got := shadowCount(e, "sh-"+ruleUnderTest); got != uint64(shRefused) || got != uint64(enfRefused) {
				t.Errorf("ShadowBlocked = %d, want %d (the enforcing copy's refusals)", got, enfRefused)
			}
			t.Logf("%d calls: the enforcing rule refused %d; the later rule refused %d", calls, enfRefused, laterRefused)
		})
	}
}

func TestShadowBreakerMovesLikeAnEnforcingOne(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, c breakerCase) {
		enf, sh := c.rule, c.rule
		enf.ID, enf.Resource = "enf", "enf"
		sh.ID, sh.Resource, sh.Shadow = "sh", "sh", true
		e, clk := newTestEngine(t, enf, sh)
		rng := rand.New(rand.NewPCG(3, 4))
		slow := c.rule.Strategy == BreakerSlowRatio
		var refused int
		calls := 2000
		if raceEnabled {
			calls = 500
		}
		for i := range calls {
			bad := rng.IntN(10) < 4
			clk.Advance(time.Duration(rng.IntN(400)) * time.Millisecond)
			pe, errE := e.Entry("enf")
			before := shadowCount(e, "sh")
			ps, errS := e.Entry("sh")
			if errS != nil {
				t.Fatalf("call %d: shadow breaker refused: %v", i, errS)
			}
			counted := shadowCount(e, "sh") - before
			if (counted == 1) != (errE != nil) {
				t.Fatalf("call %d: shadow counted %d, enforcing err %v", i, counted, errE)
			}
			refused += int(counted)
			// Both calls end with the same outcome at the same time.
			if bad && slow {
				clk.Advance(200 * time.Millisecond)
			}
			for _, p := range []Permit{pe, ps} {
				if bad && !slow {
					p.Exit(WithError(errDown))
				} else {
					p.Exit()
				}
			}
			st := e.Snapshot().Breakers
			if st[0].State != st[1].State || st[0].Transitions != st[1].Transitions {
				t.Fatalf("call %d: enforcing %v %v, shadow %v %v", i, st[0].State, st[0].Transitions, st[1].State, st[1].Transitions)
			}
		}
		tr := e.Snapshot().Breakers[1].Transitions
		if refused == 0 || tr[BreakerOpen] == 0 || tr[BreakerClosed] == 0 {
			t.Fatalf("trace did not open and close the breaker: %d refused, transitions %v", refused, tr)
		}
		t.Logf("%d calls: %d would-be refusals, transitions %v", calls, refused, tr)
	})
}

func TestShadowFlipKeepsState(t *testing.T) {
	r := fw("fw", "r", LevelGlobal, 2, time.Hour)
	r.Shadow = true
	e, _ := newTestEngine(t, r)
	for i := range 3 {
		p, err := e.Entry("r")
		if err != nil {
			t.Fatalf("call %d in shadow: %v", i, err)
		}
		p.Exit()
	}
	if got := shadowCount(e, "fw"); got != 1 {
		t.Fatalf("ShadowBlocked = %d, want 1", got)
	}
	r.Shadow = false
	if err := e.LoadRules([]Rule{r}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Entry("r"); !errors.Is(err, ErrBlocked) {
		t.Fatalf("first enforced call: %v, want refused: the window the shadow rule filled is kept", err)
	}
	s := e.Snapshot().Rules[0]
	if s.Shadow || s.ShadowBlocked != 1 {
		t.Errorf("after the flip: Shadow %v ShadowBlocked %d, want false 1", s.Shadow, s.ShadowBlocked)
	}
}

// A shadow rule never delays a call, and never sets its Quota.
func TestShadowNeverWaitsNorSetsQuota(t *testing.T) {
	r := Rule{ID: "lb", Resource: "r", Algorithm: AlgoLeakyBucket, Limit: 1, MaxWait: time.Minute, Shadow: true}
	e, clk := newTestEngine(t, r)
	start := clk.Now()
	for i := range 3 {
		p, err := e.Entry("r")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if p.Waited() != 0 {
			t.Errorf("call %d waited %v, want 0", i, p.Waited())
		}
		if q, ok := p.Quota(); ok {
			t.Errorf("call %d: Quota %+v from a shadow rule", i, q)
		}
		p.Exit()
	}
	if got := clk.Now().Sub(start); got != 0 {
		t.Errorf("the clock moved %v: a shadow rule made a call wait", got)
	}
}
