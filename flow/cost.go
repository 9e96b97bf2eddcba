package flow

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/flowgate/flowgate/flow/internal/algo"
)

// settle settles the call at its actual cost (WithActualCost) against
// the tokens it reserved, on every local limiter it took from: the
// difference is charged (a debt, within the rule's MaxDebt) or given back,
// as each algorithm settles (algo.Settler). A concurrency rule holds no
// cost and settles nothing: the option is refused for it, logged once per
// rule. Cluster rules settle through their token server (see grants).
func (c *call) settle(actual int) {
	e := c.eng
	now := e.now()
	delta := actual - c.tokens
	for _, t := range c.taken {
		s, ok := t.lim.(algo.Settler)
		if !ok {
			t.cr.cost.refuse.Do(func() {
				e.logError("flow: WithActualCost ignored", fmt.Errorf("%v rules hold no cost to settle", t.cr.rule.Algorithm), t.cr)
			})
			continue
		}
		var done float64
		if delta != 0 {
			done = s.Settle(now, t.at, delta, t.cr.maxDebt())
		}
		cr := t.cr
		if cr.parent != nil { // a param item counts on its rule
			cr = cr.parent
		}
		cr.cost.note(c.tokens, actual, delta, done)
	}
}

// costStats are a rule's settlements, for RuleStats.Cost: atomics only,
// updated by the Exits that settle.
type costStats struct {
	settled   atomic.Uint64
	estimated atomic.Uint64 // sum of the settled calls' reserved tokens
	actual    atomic.Uint64 // sum of their actual costs
	charged   atomic.Uint64 // permits charged beyond the estimates
	refunded  atomic.Uint64 // permits given back
	forgiven  atomic.Uint64 // extra cost not charged: MaxDebt reached, or the window had closed
	ratio     [len(CostRatioBounds) + 1]atomic.Uint64
	ratioSum  atomic.Uint64 // float64 bits: the sum of actual ÷ estimated
	refuse    sync.Once     // logs the refusal of WithActualCost on a rule that holds no cost
}

// CostRatioBounds are the upper bounds of the buckets CostStats.Ratio
// counts actual ÷ estimated in (the last bucket is everything above).
var CostRatioBounds = [...]float64{0.25, 0.5, 0.8, 1, 1.25, 2, 4}

func (s *costStats) note(reserved, actual, delta int, done float64) {
	s.settled.Add(1)
	s.estimated.Add(uint64(reserved))
	s.actual.Add(uint64(actual))
	switch d := math.Round(done); {
	case delta > 0:
		s.charged.Add(uint64(d))
		s.forgiven.Add(uint64(float64(delta) - d))
	case delta < 0:
		s.refunded.Add(uint64(d))
	}
	r := float64(actual) / float64(max(reserved, 1))
	i := 0
	for i < len(CostRatioBounds) && r > CostRatioBounds[i] {
		i++
	}
	s.ratio[i].Add(1)
	for {
		old := s.ratioSum.Load()
		if s.ratioSum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+r)) {
			return
		}
	}
}

// CostStats are a rule's settlements since it was loaded (WithActualCost):
// the calls settled, their estimated and actual costs, what settling
// charged, gave back, and could not charge (MaxDebt reached, or the
// window the call counted in had closed), and the actual ÷ estimated
// ratio in the buckets of CostRatioBounds (Ratio[len(CostRatioBounds)]:
// above the last bound), with the sum of the ratios.
type CostStats struct {
	Settled                    uint64
	Estimated, Actual          uint64
	Charged, Refunded, Forgave uint64
	Ratio                      [len(CostRatioBounds) + 1]uint64
	RatioSum                   float64
}

func (s *costStats) read() CostStats {
	out := CostStats{Settled: s.settled.Load(), Estimated: s.estimated.Load(), Actual: s.actual.Load(),
		Charged: s.charged.Load(), Refunded: s.refunded.Load(), Forgave: s.forgiven.Load(),
		RatioSum: math.Float64frombits(s.ratioSum.Load())}
	for i := range s.ratio {
		out.Ratio[i] = s.ratio[i].Load()
	}
	return out
}

// owed is what lim owes at now from settlements, 0 for a limiter that
// cannot owe (or none: a keyed rule has no one limiter).
func owed(lim limiter, now int64) float64 {
	if s, ok := lim.(algo.Settler); ok {
		return s.Owed(now)
	}
	return 0
}

// maxDebt is the rule's MaxDebt, one limit when not set.
func (cr *compiledRule) maxDebt() float64 {
	if cr.rule.MaxDebt > 0 {
		return cr.rule.MaxDebt
	}
	return cr.rule.Limit
}
