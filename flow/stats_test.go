package flow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

func TestStatsValues(t *testing.T) {
	clk := clock.NewFake(t0)
	e := NewEngine(WithClock(clk), WithStatsWindow(time.Second, 4))
	if err := e.LoadRules([]Rule{fw("g", "r", LevelGlobal, 3, time.Hour), fw("u", "r", LevelUser, 1, time.Hour)}); err != nil {
		t.Fatal(err)
	}
	enter := func(opts ...EntryOption) Permit {
		t.Helper()
		p, err := e.Entry("r", opts...)
		if err != nil {
			t.Fatalf("Entry: %v", err)
		}
		return p
	}
	p1 := enter()
	clk.Advance(10 * time.Millisecond)
	p1.Exit()
	p2 := enter(WithUser("a"))
	clk.Advance(300 * time.Millisecond)
	p2.Exit(WithError(errors.New("boom")))
	if _, err := e.Entry("r", WithUser("a")); err == nil {
		t.Fatal("user a passed twice")
	}
	p3 := enter()
	if _, err := e.Entry("r"); err == nil {
		t.Fatal("global passed 4 times")
	}
	s := e.Snapshot().Resources[0]
	want := ResourceStats{Resource: "r", Passed: 3, Completed: 2, Errors: 1, InFlight: 1,
		RTSum: 310 * time.Millisecond}
	want.Blocked[LevelUser], want.Blocked[LevelGlobal] = 1, 1
	if s.Resource != want.Resource || s.Passed != want.Passed || s.Completed != want.Completed || s.Errors != want.Errors ||
		s.InFlight != want.InFlight || s.RTSum != want.RTSum || s.Blocked != want.Blocked || s.Waited != 0 {
		t.Fatalf("lifetime: got %+v", s)
	}
	// 10ms falls in the (5ms, 10ms] bucket, 300ms in (250ms, 500ms].
	for i, c := range s.RTHist.Counts {
		var w uint64
		if b := s.RTHist.Bounds; i < len(b) && (b[i] == 0.01 || b[i] == 0.5) {
			w = 1
		}
		if c != w {
			t.Fatalf("RTHist bucket %d (<= %v): got %d, want %d", i, s.RTHist.Bounds[min(i, len(s.RTHist.Bounds)-1)], c, w)
		}
	}
	r := s.Recent
	if r.Span != time.Second || r.Admitted != 3 || r.Blocked != 2 || r.Completed != 2 || r.Errors != 1 ||
		r.RTSum != 310*time.Millisecond || r.MinRT != 10*time.Millisecond || r.MaxRT != 300*time.Millisecond {
		t.Fatalf("recent: got %+v", r)
	}
	// The recent window forgets; lifetime totals do not.
	clk.Advance(2 * time.Second)
	p3.Exit()
	s = e.Snapshot().Resources[0]
	if r := s.Recent; r.Admitted != 0 || r.Blocked != 0 || r.Completed != 1 || r.MinRT != 2*time.Second {
		t.Fatalf("recent after 2s: got %+v", r)
	}
	if s.Completed != 3 || s.Passed != 3 || s.InFlight != 0 {
		t.Fatalf("lifetime after 2s: got %+v", s)
	}
}

// TestConcurrentExactLimit: 16 goroutines race for an exact algorithm's
// permits; exactly Limit pass, on every level.
func TestConcurrentExactLimit(t *testing.T) {
	for _, a := range []Algorithm{AlgoFixedWindow, AlgoSlidingLog, AlgoSlidingWindow, AlgoConcurrency} {
		t.Run(a.String(), func(t *testing.T) {
			// "g": one global rule; "u": one rule per user (4 users).
			e, _ := newTestEngine(t,
				Rule{ID: "g", Resource: "g", Algorithm: a, Limit: 100, Window: time.Minute},
				Rule{ID: "u", Resource: "u", Level: LevelUser, Algorithm: a, Limit: 30, Window: time.Minute},
			)
			var passedG atomic.Int64
			var passedU [4]atomic.Int64
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					user := WithUser([]string{"a", "b", "c", "d"}[g%4])
					for range 50 { // held: no Exit, so concurrency counts too
						if _, err := e.Entry("g", user); err == nil {
							passedG.Add(1)
						}
						if _, err := e.Entry("u", user); err == nil {
							passedU[g%4].Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if passedG.Load() != 100 {
				t.Fatalf("global: %d passed, want 100", passedG.Load())
			}
			for i := range passedU {
				if passedU[i].Load() != 30 {
					t.Fatalf("user %d: %d passed, want 30", i, passedU[i].Load())
				}
			}
			s := e.Snapshot().Resources
			if s[0].Passed != 100 || s[0].Blocked[LevelGlobal] != 700 || s[0].InFlight != 100 ||
				s[1].Passed != 120 || s[1].Blocked[LevelUser] != 680 {
				t.Fatalf("stats: %+v", s)
			}
		})
	}
}

func TestGuard(t *testing.T) {
	e, clk := newTestEngine(t, fw("g", "r", LevelGlobal, 2, time.Hour))
	boom := errors.New("boom")
	var ran int
	err := e.Guard(context.Background(), "r", func(ctx context.Context) error {
		ran++
		clk.Advance(5 * time.Millisecond)
		return boom
	})
	if !errors.Is(err, boom) || ran != 1 {
		t.Fatalf("fn error: got %v (ran %d)", err, ran)
	}
	func() {
		defer func() {
			if r := recover(); r != "kaboom" {
				t.Fatalf("recover: got %v, want the original panic", r)
			}
		}()
		_ = e.Guard(context.Background(), "r", func(context.Context) error { panic("kaboom") })
	}()
	err = e.Guard(context.Background(), "r", func(context.Context) error { ran++; return nil })
	if !errors.Is(err, ErrBlocked) || ran != 1 {
		t.Fatalf("third call: got %v (ran %d), want blocked without running", err, ran)
	}
	s := e.Snapshot().Resources[0]
	if s.Completed != 2 || s.Errors != 2 || s.InFlight != 0 || s.RTSum != 5*time.Millisecond || s.Blocked[LevelGlobal] != 1 {
		t.Fatalf("stats: %+v", s)
	}
}

// TestStatsLifetimeExactAcrossTurnover: calls race bucket turnovers (the
// clock moves a bucket width every few calls) while a reader checks the
// lifetime counters never step back; at the end they are exact.
func TestStatsLifetimeExactAcrossTurnover(t *testing.T) {
	for _, n := range []int{1, 8} {
		t.Run(fmt.Sprintf("sampling 1 in %d", n), func(t *testing.T) { statsExactAcrossTurnover(t, n) })
	}
}

func statsExactAcrossTurnover(t *testing.T, sampling int) {
	clk := clock.NewFake(t0)
	e := NewEngine(WithClock(clk), WithStatsWindow(40*time.Millisecond, 4), WithRTSampling(sampling))
	if err := e.LoadRules([]Rule{{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 1000},
		{ID: "one", Resource: "x", Algorithm: AlgoFixedWindow, Limit: 1, Window: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	const workers, calls = 8, 2000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	readerDone := make(chan error)
	go func() {
		var last ResourceStats
		for {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			s := e.Snapshot().Resources[0]
			s.Blocked = e.Snapshot().Resources[1].Blocked
			if s.Passed < last.Passed || s.Completed < last.Completed || s.RTSum < last.RTSum || s.InFlight < 0 ||
				s.Blocked[LevelGlobal] < last.Blocked[LevelGlobal] {
				readerDone <- fmt.Errorf("stepped back: %+v after %+v", s, last)
				return
			}
			last = s
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				p, err := e.Entry("r")
				if err != nil {
					t.Error(err)
					return
				}
				if i%50 == w {
					clk.Advance(10 * time.Millisecond)
				}
				p.Exit()
				if p, err := e.Entry("x"); err == nil {
					p.Exit()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	s := e.Snapshot().Resources[0]
	if s.Passed != workers*calls || s.Completed != workers*calls || s.InFlight != 0 {
		t.Fatalf("lifetime: passed %d completed %d in flight %d, want %d %d 0", s.Passed, s.Completed, s.InFlight, workers*calls, workers*calls)
	}
	if x := e.Snapshot().Resources[1]; x.Blocked[LevelGlobal] != workers*calls-1 || x.Passed != 1 {
		t.Fatalf("x: passed %d blocked %d, want 1 and %d", x.Passed, x.Blocked[LevelGlobal], workers*calls-1)
	}
	var histTotal uint64
	for _, c := range s.RTHist.Counts {
		histTotal += c
	}
	if sampling == 1 && histTotal != s.Completed {
		t.Fatalf("histogram total %d, completed %d", histTotal, s.Completed)
	}
	// Sampled: a call measured while its lane bucket was light counts
	// once, one measured later counts 8 times. At worst (all sampled)
	// 16000 calls, 1 in 8 measured: 2000 +- 42 (one standard deviation)
	// samples; 10% is 4.7 sd.
	if diff := int64(histTotal) - int64(s.Completed); sampling == 8 && (diff > 1600 || diff < -1600) {
		t.Fatalf("sampled histogram total %d, completed %d: want it within 10%%", histTotal, s.Completed)
	}
}

// TestRTSamplingDefaults: the real clock samples 1 in 32 by default, other
// clocks measure every call, and WithRTSampling rounds up to a power of two.
func TestRTSamplingDefaults(t *testing.T) {
	cases := []struct {
		opts []Option
		mask uint32
	}{
		{nil, 31},
		{[]Option{WithClock(clock.NewFake(t0))}, 0},
		{[]Option{WithRTSampling(1)}, 0},
		{[]Option{WithRTSampling(0)}, 0},
		{[]Option{WithRTSampling(5)}, 7},
		{[]Option{WithClock(clock.NewFake(t0)), WithRTSampling(16)}, 15},
		{[]Option{WithRTSampling(1 << 20)}, 1023},
	}
	for i, c := range cases {
		if got := NewEngine(c.opts...).cf.rtMask; got != c.mask {
			t.Errorf("case %d: mask %d, want %d", i, got, c.mask)
		}
	}
}

// TestRTSamplingRealClock: on the real clock, with 1 in 8 measured under load, the
// counts stay exact and the response time estimate is close.
func TestRTSamplingRealClock(t *testing.T) {
	e := NewEngine(WithRTSampling(8))
	if err := e.LoadRules([]Rule{{ID: "tb", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1e9}}); err != nil {
		t.Fatal(err)
	}
	const calls = 40000
	for i := range calls {
		p, err := e.Entry("r")
		if err != nil {
			t.Fatal(err)
		}
		p.Exit(WithError(errIf(i%10 == 0)))
	}
	s := e.Snapshot().Resources[0]
	if s.Passed != calls || s.Completed != calls || s.InFlight != 0 || s.Errors != calls/10 {
		t.Fatalf("counts: passed %d completed %d in flight %d errors %d, want %d %d 0 %d", s.Passed, s.Completed, s.InFlight, s.Errors, calls, calls, calls/10)
	}
	var histTotal uint64
	for _, c := range s.RTHist.Counts {
		histTotal += c
	}
	// At most 5000 +- 66 samples expected (fewer calls are sampled when
	// the loop is slow enough for buckets to start light); 10% is over 7
	// standard deviations.
	if histTotal < calls*9/10 || histTotal > calls*11/10 {
		t.Fatalf("histogram total %d: want it within 10%% of %d", histTotal, calls)
	}
	if s.RTSum <= 0 {
		t.Fatalf("RTSum %v: want > 0", s.RTSum)
	}
}

// TestRTSamplingLightExact: sampling starts only once a lane's statistics
// bucket has counted exactPerLane calls. One goroutine reuses one record,
// so its calls count in one lane: each bucket measures its first
// exactPerLane calls whole, standing for one call each, and samples the
// rest 1 in 32, standing for 32 each. A resource whose adaptive limit
// learns from every call is measured whole at any traffic.
func TestRTSamplingLightExact(t *testing.T) {
	clk := clock.NewFake(t0)
	e := NewEngine(WithClock(clk), WithRTSampling(32))
	if err := e.LoadRules([]Rule{{ID: "tb", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1e9},
		{ID: "auto", Resource: "a", Algorithm: AlgoAdaptiveConcurrency, InitialLimit: 100}}); err != nil {
		t.Fatal(err)
	}
	call := func(res string, rt time.Duration) {
		t.Helper()
		p, err := e.Entry(res)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(rt)
		p.Exit()
	}
	histTotal := func(s ResourceStats) (n uint64) {
		for _, c := range s.RTHist.Counts {
			n += c
		}
		return n
	}
	// Light: exactPerLane calls in each of 20 buckets of 100ms, each
	// taking 3ms: every one measured, the figures exact.
	for range 20 {
		for range exactPerLane {
			call("r", 3*time.Millisecond)
		}
		clk.Advance(100*time.Millisecond - exactPerLane*3*time.Millisecond)
	}
	s := e.Snapshot().Resources[1]
	const light = 20 * exactPerLane
	if s.Resource != "r" || s.Completed != light || histTotal(s) != light || s.RTSum != light*3*time.Millisecond {
		t.Fatalf("light traffic: %s completed %d, histogram total %d, RTSum %v; want %d, %d and %v",
			s.Resource, s.Completed, histTotal(s), s.RTSum, light, light, light*3*time.Millisecond)
	}
	// Heavy: 20000 calls in one bucket. The first exactPerLane of each
	// lane count once (one lane, or more if a garbage collection emptied
	// the pool and the goroutine got a new record), the rest 32 times
	// each when measured: 625 +- 25 of them.
	const heavy = 20000
	for range heavy {
		call("r", 0)
		call("a", 0)
	}
	s = e.Snapshot().Resources[1]
	heavyTotal := histTotal(s) - light
	lanes := uint64(1)
	for ; lanes < maxLanes && (heavyTotal-lanes*exactPerLane)%32 != 0; lanes++ {
	}
	if sampled := heavyTotal - lanes*exactPerLane; sampled%32 != 0 || sampled < heavy*9/10 || sampled > heavy*11/10 {
		t.Fatalf("heavy traffic: histogram total %d; want %d, then %d per lane exact and a multiple of 32 within 10%% of %d",
			histTotal(s), light, exactPerLane, heavy)
	}
	if a := e.Snapshot().Resources[0]; a.Resource != "a" || histTotal(a) != heavy || a.Completed != heavy {
		t.Fatalf("adaptive resource %s: histogram total %d, completed %d; want every call measured (%d)", a.Resource, histTotal(a), a.Completed, heavy)
	}
}

func errIf(b bool) error {
	if b {
		return errors.New("failed")
	}
	return nil
}

// TestPermitSampleUniform: each residue of the permit's stream modulo 8
// comes up one time in eight (80 000 draws: 10 000 +- 94 each; 5% is over
// five standard deviations), and two permits seeded apart differ.
func TestPermitSampleUniform(t *testing.T) {
	p, q := &call{rng: 1}, &call{rng: 2}
	var counts [8]int
	same := 0
	for range 80000 {
		a := p.sample()
		counts[a&7]++
		if a == q.sample() {
			same++
		}
	}
	for r, c := range counts {
		if c < 9500 || c > 10500 {
			t.Fatalf("residue %d drawn %d times of 80000, want about 10000", r, c)
		}
	}
	if same > 10 {
		t.Fatalf("two streams agreed %d times of 80000", same)
	}
}

// TestStatsLanes: permits made one after another count in different lanes
// (see laneBucket), and the statistics sum every lane.
func TestStatsLanes(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 100})
	var ps []Permit
	for range 4 {
		p, err := e.Entry("r")
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	st := e.rules.Load().stats[0]
	if a, b := uint64(ps[0].c.lane)&st.laneMask, uint64(ps[1].c.lane)&st.laneMask; st.laneMask > 0 && a == b {
		t.Errorf("two new permits share lane %d", a)
	}
	if s := e.Snapshot().Resources[0]; s.Passed != 4 || s.InFlight != 4 || s.Recent.Admitted != 4 {
		t.Fatalf("after 4 entries: passed %d in flight %d recent %d, want 4 4 4", s.Passed, s.InFlight, s.Recent.Admitted)
	}
	clk.Advance(time.Millisecond)
	for _, p := range ps {
		p.Exit()
	}
	if s := e.Snapshot().Resources[0]; s.Completed != 4 || s.InFlight != 0 || s.Recent.Completed != 4 {
		t.Fatalf("after 4 exits: completed %d in flight %d recent %d, want 4 0 4", s.Completed, s.InFlight, s.Recent.Completed)
	}
}
