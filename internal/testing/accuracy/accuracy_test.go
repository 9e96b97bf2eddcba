package accuracy

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestMeasureCountsWindows(t *testing.T) {
	// 10 admissions per 10 ms for 3 s: every 1 s window holds 1000.
	var tr Trace
	for i := range 300 {
		for range 10 {
			tr.Admitted = append(tr.Admitted, int64(i)*int64(Step))
		}
	}
	tr.Refused = []int64{int64(1500 * time.Millisecond)}
	tr.Elapsed = 3 * time.Second
	c := Measure(tr, Windows{Length: time.Second, Skip: time.Second}, 2000, 1000)
	if c.Worst != 1000 || c.Best != 1000 {
		t.Fatalf("worst, best = %d, %d; want 1000, 1000", c.Worst, c.Best)
	}
	if c.WorstPct != 100 {
		t.Fatalf("worst %% = %v, want 100", c.WorstPct)
	}
	if c.RefusedUnder != 1 { // 1000 admitted of a 2000 limit
		t.Fatalf("refused under = %d, want 1", c.RefusedUnder)
	}
	// A stall from 2.0 s to 2.1 s takes the windows ending after 2.0 s out.
	tr.Stalls = [][2]int64{{int64(2 * time.Second), int64(2100 * time.Millisecond)}}
	c = Measure(tr, Windows{Length: time.Second, Skip: time.Second}, 2000, 1000)
	if c.Windows != 1 || c.Skipped != 100 {
		t.Fatalf("windows, skipped = %d, %d; want 1, 100", c.Windows, c.Skipped)
	}
	// Offered 2000/s but only 1000/s decided: the generator was starved.
	tr.Stalls, tr.Rate = nil, 2000
	if c = Measure(tr, Windows{Length: time.Second, Skip: time.Second}, 2000, 1000); c.Windows != 0 {
		t.Fatalf("starved run: %d windows measured, want 0", c.Windows)
	}
}

func TestMeasureAlignsToTheEpoch(t *testing.T) {
	// A fixed window of 100/s (its windows are epoch seconds) admitting its
	// limit at the end of one window and again at the start of the next:
	// its own windows hold 100 each, a window across the boundary 200.
	tr := Trace{Start: int64(1e18) + int64(300*time.Millisecond), Elapsed: 3 * time.Second}
	for _, at := range []time.Duration{1690 * time.Millisecond, 1700 * time.Millisecond} { // 1.7 s: an epoch second
		for range 100 {
			tr.Admitted = append(tr.Admitted, int64(at))
		}
	}
	own := Measure(tr, Windows{Length: time.Second, Step: time.Second}, 100, 100)
	if own.Worst != 100 || own.Best != 100 || own.Windows != 2 {
		t.Fatalf("aligned: worst, best, windows = %d, %d, %d; want 100, 100, 2", own.Worst, own.Best, own.Windows)
	}
	if any := Measure(tr, Windows{Length: time.Second}, 100, 100); any.Best != 200 {
		t.Fatalf("10 ms steps: best %d, want 200 (a window across the boundary)", any.Best)
	}
}

func TestShareSumsToOne(t *testing.T) {
	for _, s := range []Shape{Even, Skewed, Moving} {
		for _, n := range []int{1, 2, 4, 32} {
			sum := 0.0
			for i := range n {
				sum += s.share(i, n, 5*time.Second)
			}
			if sum < 0.999 || sum > 1.001 {
				t.Fatalf("%v n=%d: shares sum to %v", s, n, sum)
			}
		}
	}
	if got := Moving.share(1, 4, MoveEvery); got != 0.9 {
		t.Fatalf("moving: instance 1 after one move has %v, want 0.9", got)
	}
}

func TestRunPacesByTheClock(t *testing.T) {
	// A decider that admits everything: what Run offers over 500 ms at
	// 2000/s must be 1000 calls, whatever the machine's speed: a stall
	// delays calls (into the stall Run records) but loses none.
	var calls atomic.Int64
	d := func() bool { calls.Add(1); return true }
	tr := Run(Load{Rate: 2000, Duration: 500 * time.Millisecond, Shape: Skewed}, []Decide{d, d})
	got := len(tr.Admitted) + int(tr.Dropped)
	if got < 998 || got > 1001 {
		t.Fatalf("offered %d calls in 500 ms at 2000/s, want about 1000", got)
	}
	if int(calls.Load()) != len(tr.Admitted) {
		t.Fatalf("calls %d, admitted recorded %d", calls.Load(), len(tr.Admitted))
	}
}
