package adaptive

import (
	"math"

	"github.com/flowgate/flowgate/flow"
)

// guardHistory is how many steps of in-flight estimates the guard keeps: it
// admits up to the best of them, as Sentinel uses the best completion rate
// of its window, so blocking (which lowers completions) does not ratchet
// the bound down.
const guardHistory = 8

// guard is the state of the system guard.
type guard struct {
	est   [guardHistory]float64 // in-flight the engine sustained, by step
	n     int
	limit int64 // last limit handed to the engine; 0 = off
}

// inFlightBound is Sentinel's BBR bound, summed per resource by Little's law:
// Σ completions/s × smallest response time, over the engine's recent window.
// Summing per resource keeps a slow resource from being judged by a fast
// one's response time.
func inFlightBound(rs []flow.ResourceStats) float64 {
	var b float64
	for _, r := range rs {
		w := r.Recent
		if w.Span <= 0 || w.Completed == 0 || w.MinRT <= 0 {
			continue
		}
		b += float64(w.Completed) / w.Span.Seconds() * w.MinRT.Seconds()
	}
	return b
}

// guardLimit turns the best recent bound into the engine's limit. The engine
// refuses while in-flight >= limit; Sentinel admits while in-flight <=
// bound, hence the +1. The bound never falls below minInFlight.
func guardLimit(best float64, minInFlight int64) int64 {
	return max(minInFlight, int64(math.Floor(best))) + 1
}

// guardStep runs the guard after a step (c.mu held).
func (c *Controller) guardStep() {
	g := &c.guard
	g.est[g.n%guardHistory] = inFlightBound(c.eng.Snapshot().Resources)
	g.n++
	var limit int64
	if c.st.CPU > c.cfg.SystemGuard.CPU {
		best := 0.0
		for _, e := range g.est[:min(g.n, guardHistory)] {
			best = max(best, e)
		}
		limit = guardLimit(best, c.cfg.SystemGuard.MinInFlight)
	}
	if limit == g.limit {
		return
	}
	c.eng.SetSystemLimit(limit)
	if c.log != nil {
		c.log.Info("adaptive: system guard", "limit", limit, "cpu", c.st.CPU, "threshold", c.cfg.SystemGuard.CPU)
	}
	g.limit = limit
}
