package cluster

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/accuracy"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// TestLeasingAccuracy is the small version of the bench module's accuracy
// table (make bench-accuracy): 4 instances, each with its own client,
// token server with leasing at its defaults, and engine, share one
// token_bucket rule of 1000/s on a real Redis. Offered a paced load
// with one hot instance, no 1 s window (sliding in 10 ms steps, after the
// first second) may leave 98–102% of the limit (plus the burst, 2%), and at 0.8x the limit no
// call may be refused. Load is paced by the wall clock because Redis's
// clock decides: this is a measurement, not a wait for logic.
//
// No sliding_window cell at 10x: its leasing dip (issue 22) struck only
// some runs, and after its fix a try under -race with one core busy read
// 95.4% (the fetches lag a pulse's release more as round trips slow), so
// such a cell would fail on a loaded machine, not on a fault.
// TestSlidingRetryNeverSkipsASubWindow pins the dip's cause instead.
func TestLeasingAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the accuracy cells take a few seconds")
	}
	srv := redistest.Start(t)
	const limit, burst = 1000, 20
	cells := []struct {
		load  float64
		shape accuracy.Shape
	}{
		{0.8, accuracy.Even},
		{2, accuracy.Skewed},
	}
	var unmeasured []string
	for _, c := range cells {
		res := uniq("acc")
		rule := crule(res, res, flow.AlgoTokenBucket, limit, time.Second)
		rule.Burst = burst // see accMiss
		inst := make([]accuracy.Decide, 4)
		// Refusals because Redis did not answer in time (the rule's deny
		// fallback) are the machine's, not the limiter's: a try with any
		// is measured again.
		var unavailable atomic.Int64
		for i := range inst {
			ts := newServer(t, srv.NewClient(srv.ClientOptions()), WithLeasing(LeaseConfig{}))
			eng := flow.NewEngine(flow.WithTokenServer(ts))
			if err := eng.LoadRules([]flow.Rule{rule}); err != nil {
				t.Fatal(err)
			}
			inst[i] = func() bool {
				p, err := eng.Entry(res)
				if err != nil {
					var be *flow.BlockError
					if !errors.As(err, &be) {
						t.Errorf("entry: %v", err)
					} else if be.Reason == flow.ReasonClusterUnavailable {
						unavailable.Add(1)
					}
					return false
				}
				p.Exit()
				return true
			}
		}
		// A busy machine stalls this process now and then: the windows
		// around a stall are left out, and a cell is run again (up to 5
		// times) when too few windows are left or it missed the band, so
		// one bad moment of a shared machine does not fail the test while
		// a leasing fault, which misses every time, does.
		var misses []string
		measured := false
		for try := 0; try < 5; try++ {
			unavailable.Store(0)
			tr := accuracy.Run(accuracy.Load{Rate: c.load * limit, Duration: 4 * time.Second, Shape: c.shape}, inst)
			m := accuracy.Measure(tr, accuracy.Windows{Length: time.Second, Skip: time.Second}, limit, min(c.load, 1)*limit)
			t.Logf("load %.1fx %v, try %d: worst %d (%.1f%%), best %d (%.1f%%), refused under the limit %d, %d decisions, %d not offered, %d refused as Redis timed out, %d of %d windows left out (stalls)",
				c.load, c.shape, try+1, m.Worst, m.WorstPct, m.Best, m.BestPct, m.RefusedUnder, m.Decisions, tr.Dropped, unavailable.Load(), m.Skipped, m.Skipped+m.Windows)
			if m.Windows < 20 || tr.Dropped > 0 || unavailable.Load() > 0 { // the machine, not the limiter: measure again
				continue
			}
			measured = true
			miss := accMiss(c.load, m, limit, burst)
			if miss == "" {
				misses = nil
				break
			}
			misses = append(misses, miss)
		}
		if !measured {
			unmeasured = append(unmeasured, fmt.Sprintf("%.1fx %v", c.load, c.shape))
		}
		for _, m := range misses {
			t.Errorf("load %.1fx %v: %s", c.load, c.shape, m)
		}
	}
	if len(unmeasured) > 0 { // not measured is not passed: make test must not pass by not checking
		t.Errorf("%v: the machine stalled this process, its workers or Redis in each of 5 tries: no try could be judged", unmeasured)
	}
}

// accMiss says how a measured cell leaves the band, or "" when it holds.
func accMiss(load float64, m accuracy.Cell, limit, burst float64) string {
	// A token bucket may add its burst to a window (it saves what a pause
	// of the load generator left unused), so the band's top is 102% +
	// burst: a burst of 2% of the limit keeps the test strict and covers
	// the pauses shorter than accuracy.StallGap.
	if top := 102 + 100*burst/limit; load >= 1 && (m.WorstPct < 98 || m.BestPct > top) {
		return fmt.Sprintf("windows %.1f%%..%.1f%% of the limit, want 98..%.0f%% (102%% + burst)", m.WorstPct, m.BestPct, top)
	}
	// Refusals right after a stall are the bucket's own (the backlog
	// arrives at once): Measure leaves them out with the windows.
	if load < 0.9 && m.RefusedUnder > 0 {
		return fmt.Sprintf("%d calls refused, want none below 0.9x the limit", m.RefusedUnder)
	}
	return ""
}
