package bench

import (
	"strings"
	"testing"

	"github.com/flowgate/flowgate/internal/testing/accuracy"
)

// TestAccuracySummary: the README's row folds a setting's cells the way
// its header says, and the marks and picture follow the band.
func TestAccuracySummary(t *testing.T) {
	cell := func(load float64, shape string, worst, best float64, windows, refused int) accRow {
		return accRow{Algo: "sliding_window", Setting: "defaults", N: 4, Load: load, Shape: shape,
			Cell:            accuracy.Cell{WorstPct: worst, BestPct: best, Windows: windows, RefusedUnder: refused, Skipped: 1, DecisionsPerS: 10 * load},
			SlidingWorstPct: worst - 1, SlidingBestPct: best + 1, TripsPer1000: 100 * load}
	}
	rows := []accRow{
		cell(0.8, "skewed", 99, 100, 10, 3), // below the limit: only its refusals count
		cell(1, "skewed", 99.5, 100.2, 10, 7),
		cell(10, "skewed", 97.5, 100.1, 10, 0),
		cell(10, "even", 50, 150, 0, 0), // no window measured: left out
	}
	sum := accSummarize(rows)
	if len(sum) != 1 {
		t.Fatalf("%d summaries, want 1", len(sum))
	}
	s := sum[0]
	if s.worst != 97.5 || s.best != 100.2 || s.measured != 2 {
		t.Errorf("worst, best, measured = %v, %v, %d; want 97.5, 100.2, 2", s.worst, s.best, s.measured)
	}
	if s.refusedLow != 3 || s.trips != 100 || s.dps != 100 {
		t.Errorf("refused < 0.9x, trips, decisions/s = %d, %v, %v; want 3, 100 (1x skewed), 100 (10x skewed)", s.refusedLow, s.trips, s.dps)
	}
	if got := accMark("sliding_window", 97.5); got != "97.5 ✗" {
		t.Errorf("97.5%% of a sliding window marked %q, want it outside the band", got)
	}
	if got := accMark("token_bucket", 103.9); got != "103.9" {
		t.Errorf("103.9%% of a token bucket with a 2%% burst marked %q, want it inside", got)
	}
	// A split's miss of 60% is drawn at the picture's 10% top, labelled.
	split := accSummary{algo: "token_bucket", setting: "split", n: 4, worst: 40, best: 100, measured: 1}
	if svg := string(accSVG("token_bucket", []accSummary{split})); !strings.Contains(svg, ">60%<") || !strings.Contains(svg, "2% band") {
		t.Errorf("picture lacks the clipped point's label or the band:\n%s", svg)
	}
}
