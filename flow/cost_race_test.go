package flow

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestActualCostConcurrentSettlement: goroutines enter and exit at once,
// each call reserving 5 and settling at 1 to 25, over 6 aligned windows of
// virtual time; run under -race. What the rule charged (the reserved
// tokens of admitted calls, plus charges, less refunds) stays within the
// bound: per window limit + maxDebt for the windows (a window's debt ends
// with it), and over the run limit x (windows-1) + burst + maxDebt for the
// buckets (a debt carries over until paid).
func TestActualCostConcurrentSettlement(t *testing.T) {
	const limit, maxDebt, rounds, goroutines, calls = 100.0, 20.0, 6, 8, 40
	for _, algo := range []Algorithm{AlgoFixedWindow, AlgoSlidingWindow, AlgoSlidingLog, AlgoTokenBucket, AlgoWarmUp, AlgoLeakyBucket} {
		t.Run(algo.String(), func(t *testing.T) {
			r := Rule{ID: "x", Resource: "r", Algorithm: algo, Limit: limit, Window: time.Second, MaxDebt: maxDebt}
			if algo == AlgoWarmUp {
				r.Warmup = 2 * time.Second
			}
			e, clk := newTestEngine(t, r)
			var total float64
			windows := algo == AlgoFixedWindow || algo == AlgoSlidingWindow || algo == AlgoSlidingLog
			for round := range rounds {
				before := ruleStats(t, e, "x").Cost
				reserved := concurrentCalls(e, goroutines, calls, uint64(round))
				after := ruleStats(t, e, "x").Cost
				got := float64(reserved) + float64(after.Charged-before.Charged) - float64(after.Refunded-before.Refunded)
				if after.Settled-before.Settled != uint64(reserved/5) {
					t.Fatalf("round %d: %d settled, want every admitted call (%d)", round, after.Settled-before.Settled, reserved/5)
				}
				if windows && got > limit+maxDebt {
					t.Fatalf("round %d: charged %v in one window, want <= %v", round, got, limit+maxDebt)
				}
				total += got
				clk.Advance(time.Second)
			}
			bound := limit*(rounds-1) + limit + maxDebt // burst: one limit
			if windows {
				bound = rounds * (limit + maxDebt)
			}
			if total > bound {
				t.Fatalf("charged %v over %d windows, want <= %v", total, rounds, bound)
			}
			t.Logf("%s: charged %v over %d windows (bound %v)", algo, total, rounds, bound)
		})
	}
}

// concurrentCalls runs goroutines x calls calls on e at once, each
// reserving 5 and settling at a random 1..25; it returns the tokens the
// admitted calls reserved.
func concurrentCalls(e *Engine, goroutines, calls int, seed uint64) int64 {
	var reserved atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for range calls {
				p, err := e.Entry("r", WithTokens(5))
				if err != nil {
					continue
				}
				reserved.Add(5)
				p.Exit(WithActualCost(1 + rng.IntN(25)))
			}
		})
	}
	wg.Wait()
	return reserved.Load()
}
