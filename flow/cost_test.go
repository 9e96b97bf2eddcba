package flow

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestActualCostDebtIsPaidByLaterCalls: a token bucket of 100 a minute;
// a call reserves 10 and costs 60: the 50 extra are owed, so later calls
// are refused until the debt is paid at the bucket's rate.
func TestActualCostDebtIsPaidByLaterCalls(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "tb", Resource: "llm", Algorithm: AlgoTokenBucket, Limit: 100, Window: time.Minute})
	p, err := e.Entry("llm", WithTokens(10))
	if err != nil {
		t.Fatal(err)
	}
	p.Exit(WithActualCost(60))
	// 100 stored - 60 = 40 left: a call of 40 passes.
	p2, err := e.Entry("llm", WithTokens(40))
	if err != nil {
		t.Fatalf("40 of the 40 left: %v", err)
	}
	p2.Exit()
	// Now the settlement's debt: a call reserves 10, costs 100 (maxDebt
	// 100 by default): the bucket owes 90, and refuses for the 54s that
	// 90 take at 100/min.
	clk.Advance(6 * time.Second) // 10 permits back
	p3, err := e.Entry("llm", WithTokens(10))
	if err != nil {
		t.Fatal(err)
	}
	p3.Exit(WithActualCost(100))
	st := ruleStats(t, e, "tb")
	if st.Cost.Settled != 2 || st.Cost.Estimated != 20 || st.Cost.Actual != 160 || st.Cost.Charged != 140 {
		t.Errorf("cost stats %+v, want 2 settled, 20 estimated, 160 actual, 140 charged", st.Cost)
	}
	if st.Owed < 89.9 || st.Owed > 90.1 {
		t.Errorf("owed %v, want 90", st.Owed)
	}
	clk.Advance(53900 * time.Millisecond)
	if _, err := e.Entry("llm"); err == nil {
		t.Fatal("a call passed while the debt was owed")
	}
	clk.Advance(100 * time.Millisecond)
	if p, err := e.Entry("llm"); err != nil {
		t.Fatalf("after the debt was paid: %v", err)
	} else {
		p.Exit()
	}
}

// TestActualCostRefund: a call that reserved 50 and cost 5 gives 45 back
// at once, on a fixed window; a second Exit settles nothing.
func TestActualCostRefund(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "fw", Resource: "r", Algorithm: AlgoFixedWindow, Limit: 100, Window: time.Hour})
	p, err := e.Entry("r", WithTokens(50))
	if err != nil {
		t.Fatal(err)
	}
	p.Exit(WithActualCost(5))
	p.Exit(WithActualCost(500)) // stale: ends nothing, settles nothing
	p2, err := e.Entry("r", WithTokens(95))
	if err != nil {
		t.Fatalf("95 of the 95 left after the refund: %v", err)
	}
	p2.Exit()
	if st := ruleStats(t, e, "fw"); st.Cost.Settled != 1 || st.Cost.Refunded != 45 {
		t.Errorf("cost stats %+v, want 1 settled, 45 refunded", st.Cost)
	}
}

// TestActualCostConcurrencyRefused: a concurrency rule holds no cost: the
// option changes nothing there, and the call's slot is released as usual.
func TestActualCostConcurrencyRefused(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 1})
	p, err := e.Entry("r")
	if err != nil {
		t.Fatal(err)
	}
	p.Exit(WithActualCost(1000))
	p2, err := e.Entry("r")
	if err != nil {
		t.Fatalf("the slot was not released: %v", err)
	}
	p2.Exit()
	if st := ruleStats(t, e, "c"); st.Cost.Settled != 0 {
		t.Errorf("a concurrency rule settled: %+v", st.Cost)
	}
}

// TestActualCostBoundOverEveryWindow: calls reserve an estimate of 5 and
// cost 0.2x to 5x that; over every window, what the rule charged (actual
// cost less what MaxDebt forgave) stays within limit + maxDebt.
func TestActualCostBoundOverEveryWindow(t *testing.T) {
	for _, algo := range []Algorithm{AlgoFixedWindow, AlgoSlidingWindow, AlgoTokenBucket, AlgoLeakyBucket} {
		t.Run(algo.String(), func(t *testing.T) {
			const limit, maxDebt = 100.0, 20.0
			e, clk := newTestEngine(t, Rule{ID: "x", Resource: "r", Algorithm: algo, Limit: limit, Window: time.Second, MaxDebt: maxDebt})
			rng := rand.New(rand.NewPCG(1, 2))
			type done struct {
				at   time.Duration
				cost float64
			}
			var calls []done
			start := clk.Now()
			for range 6000 { // 60s, a call every 10ms
				clk.Advance(10 * time.Millisecond)
				p, err := e.Entry("r", WithTokens(5))
				if err != nil {
					continue
				}
				before := ruleStats(t, e, "x").Cost
				p.Exit(WithActualCost(1 + rng.IntN(25)))
				after := ruleStats(t, e, "x").Cost
				charged := float64(after.Actual-before.Actual) - float64(after.Forgave-before.Forgave)
				calls = append(calls, done{clk.Now().Sub(start), charged})
			}
			worst := 0.0
			for i := range calls { // every window of 1s that starts at a call
				from := calls[i].at
				if algo == AlgoFixedWindow { // its promise is per aligned window
					from = from.Truncate(time.Second)
				}
				sum := 0.0
				for j := range calls {
					if calls[j].at >= from && calls[j].at-from < time.Second {
						sum += calls[j].cost
					}
				}
				worst = max(worst, sum)
			}
			// A token bucket also holds a burst (its limit) at the start
			// of a window; the windows are exact.
			bound := limit + maxDebt
			if algo == AlgoTokenBucket || algo == AlgoLeakyBucket {
				bound += limit
			}
			if worst > bound {
				t.Errorf("%s: %v charged in one 1s window, want <= %v", algo, worst, bound)
			}
			st := ruleStats(t, e, "x").Cost
			t.Logf("%s: %d calls settled, worst 1s window %v (bound %v), charged %d, refunded %d, forgave %d",
				algo, st.Settled, worst, bound, st.Charged, st.Refunded, st.Forgave)
		})
	}
}

func ruleStats(t *testing.T, e *Engine, id string) RuleStats {
	t.Helper()
	for _, r := range e.Snapshot().Rules {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no rule %q", id)
	return RuleStats{}
}

// TestActualCostClusterSettle: a cluster rule's grant is settled by its
// token server in one Release at Exit, with the reservation, the actual
// cost and the grant as Acquire returned it; an Exit without the option
// releases nothing for a rate rule, and a second Exit settles nothing.
func TestActualCostClusterSettle(t *testing.T) {
	grant := TokenResult{Allowed: true, Refused: -1, Remaining: 5, At: 12345, Stripe: 2}
	ts := &fakeTokenServer{res: grant, instances: 1}
	e, _ := clusterEngine(t, ts, cfw("c", LevelUser, 100, "global", "deny"))
	p, err := e.Entry("r", WithUser("a"), WithTokens(3))
	if err != nil {
		t.Fatal(err)
	}
	p.Exit(WithActualCost(7))
	p.Exit(WithActualCost(9))
	q, err := e.Entry("r", WithUser("a"))
	if err != nil {
		t.Fatal(err)
	}
	q.Exit()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.relReqs) != 1 {
		t.Fatalf("%d releases, want the one settlement", len(ts.relReqs))
	}
	req, res := ts.relReqs[0], ts.released[0]
	if !req.Settle || req.Refund || req.Actual != 7 || req.Tokens != 3 || req.Key != "a" || res != grant {
		t.Fatalf("settled %+v with %+v, want Settle, Actual 7, Tokens 3 and the grant %+v", req, res, grant)
	}
}
