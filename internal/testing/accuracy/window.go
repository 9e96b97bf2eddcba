package accuracy

import (
	"slices"
	"sort"
	"time"
)

// Step is how far the measuring window slides by default.
const Step = 10 * time.Millisecond

// Windows says which windows Measure counts: Length long, starting at
// every multiple of Step (default the package's Step) since the Unix epoch
// that lies at least Skip after the run's start. The epoch alignment is
// the one flowgate's windowed algorithms use (clock.Origin; Redis's clock
// in the cluster scripts): with Step = Length a fixed_window's own windows
// are measured, with Step = Length/Buckets a sliding_window's sub-window
// grid, at whose points its estimate is exact. Any other phase measures
// what a downstream service sees, which a windowed algorithm rightly
// exceeds (a fixed window up to twice its limit across a boundary).
type Windows struct {
	Length, Step, Skip time.Duration
}

// Cell is one run's figures.
type Cell struct {
	Worst, Best   int     // fewest and most admitted in one window
	WorstPct      float64 // Worst as % of the reference (limit, or offered load below it)
	BestPct       float64
	RefusedUnder  int     // refusals while the trailing window admitted under 98% of the limit
	Windows       int     // windows measured
	Skipped       int     // windows left out: they overlap a stall of the load generator
	Decisions     int     // admitted + refused in the measured span
	DecisionsPerS float64 // over the whole run
}

// Measure slides a window of w.Length in w.Step steps over [w.Skip, end of
// run] and finds the fewest and most admissions in one window. ref is
// what a perfect limiter would admit per window: the limit, or the
// offered load when that is below it. A refusal counts as "under the
// limit" when the window ending at it admitted less than 98% of limit.
// Windows that overlap a stall (extended by StallGap, while the backlog
// drains), or in which fewer than 97% of the offered calls were decided,
// are left out and counted in Skipped.
func Measure(tr Trace, w Windows, limit, ref float64) Cell {
	win, skip, step := int64(w.Length), int64(w.Skip), int64(w.Step)
	if step <= 0 {
		step = int64(Step)
	}
	// The first window starts on the epoch's grid, at or after skip.
	first := skip + (step-(tr.Start+skip)%step)%step
	tl := newTimeline(&tr)
	end := int64(tr.Elapsed)
	c := Cell{Worst: -1}
	for from := first; from+win <= end; from += step {
		if tl.stalled(from, from+win) {
			c.Skipped++
			continue
		}
		c.Windows++
		k := tl.admitted(from, from+win)
		if c.Worst < 0 || k < c.Worst {
			c.Worst = k
		}
		c.Best = max(c.Best, k)
	}
	c.Worst = max(c.Worst, 0)
	if ref > 0 {
		c.WorstPct = 100 * float64(c.Worst) / ref
		c.BestPct = 100 * float64(c.Best) / ref
	}
	for _, t := range tr.Refused {
		if t >= skip && !tl.stalled(t-win, t+1) && float64(tl.admitted(t-win, t+1)) < 0.98*limit {
			c.RefusedUnder++
		}
	}
	c.Decisions = len(tr.Admitted) + len(tr.Refused)
	if tr.Elapsed > 0 {
		c.DecisionsPerS = float64(c.Decisions) / tr.Elapsed.Seconds()
	}
	return c
}

// timeline holds a trace's times sorted, to count them in windows.
type timeline struct {
	tr  *Trace
	adm []int64 // the admissions, sorted
	all []int64 // the admissions and refusals, sorted
}

func newTimeline(tr *Trace) timeline {
	adm := slices.Clone(tr.Admitted)
	slices.Sort(adm)
	all := append(slices.Clone(tr.Refused), adm...)
	slices.Sort(all)
	return timeline{tr: tr, adm: adm, all: all}
}

// admitted counts the admissions in [from, to).
func (tl timeline) admitted(from, to int64) int { return countIn(tl.adm, from, to) }

// stalled says whether the window [from, to) measures the load generator
// rather than the limiter: the instances decided under 97% of the calls
// the pacer offered in it (a starved generator), or a pacer stall falls in
// it or within StallGap before it.
func (tl timeline) stalled(from, to int64) bool {
	tr := tl.tr
	if tr.Rate > 0 && float64(countIn(tl.all, from, to)) < 0.97*tr.Rate*float64(to-from)/1e9 {
		return true
	}
	for _, s := range tr.Stalls {
		if s[0] < to && s[1]+int64(StallGap) > from {
			return true
		}
	}
	return false
}

// countIn counts the times in sorted xs that fall in [from, to).
func countIn(xs []int64, from, to int64) int {
	return sort.Search(len(xs), func(i int) bool { return xs[i] >= to }) -
		sort.Search(len(xs), func(i int) bool { return xs[i] >= from })
}
