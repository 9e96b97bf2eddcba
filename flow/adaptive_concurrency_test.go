package flow

import (
	"strings"
	"testing"
	"time"
)

func containsLine(s, prefix string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// serve runs rounds of: enter until refused (or max calls), advance the
// clock by rtt, exit them all. It returns the limit after each round.
func serve(t *testing.T, e *Engine, clk interface{ Advance(time.Duration) }, rounds, max int, rtt func(inFlight int) time.Duration) []int64 {
	t.Helper()
	var out []int64
	for range rounds {
		ps, _ := hold(t, e, "r", max)
		clk.Advance(rtt(len(ps)))
		for _, p := range ps {
			p.Exit()
		}
		out = append(out, adaptiveStats(t, e).Limit)
	}
	return out
}

func adaptiveStats(t *testing.T, e *Engine) AdaptiveStats {
	t.Helper()
	for _, r := range e.Snapshot().Rules {
		if r.AdaptiveConcurrency != nil {
			return *r.AdaptiveConcurrency
		}
	}
	t.Fatal("no adaptive_concurrency rule in the snapshot")
	return AdaptiveStats{}
}

func TestAdaptiveGrowsWhileLatencyIsFlat(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "a", Resource: "r", Algorithm: AlgoAdaptiveConcurrency})
	if s := adaptiveStats(t, e); s.Limit != DefaultInitialLimit || s.ShortRTT != 0 {
		t.Fatalf("fresh: %+v, want limit %d and no RTT yet", s, DefaultInitialLimit)
	}
	limits := serve(t, e, clk, 80, 10000, func(int) time.Duration { return 10 * time.Millisecond })
	if got := limits[len(limits)-1]; got < 100 {
		t.Fatalf("flat 10ms latency, always refused: limit went %v, want it to grow past 100", limits)
	}
	s := adaptiveStats(t, e)
	if s.ShortRTT != 10*time.Millisecond || s.LongRTT != 10*time.Millisecond || s.InFlight != 0 {
		t.Fatalf("stats %+v, want short and long RTT 10ms, nothing in flight", s)
	}
}

func TestAdaptiveShrinksWhenLatencyPassesTolerance(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "a", Resource: "r", Algorithm: AlgoAdaptiveConcurrency, InitialLimit: 200})
	serve(t, e, clk, 5, 10000, func(int) time.Duration { return 10 * time.Millisecond })
	before := adaptiveStats(t, e).Limit
	// A service that serves 50 at once: latency grows with the queue.
	limits := serve(t, e, clk, 60, 10000, func(n int) time.Duration {
		return time.Duration(float64(10*time.Millisecond) * max(1, float64(n)/50))
	})
	got := limits[len(limits)-1]
	if got >= before || got > 75 || got < 40 {
		t.Fatalf("capacity 50: limit %d -> %v; want it to settle within [40, 75]", before, limits)
	}
}

func TestAdaptiveDoesNotGrowUnused(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "a", Resource: "r", Algorithm: AlgoAdaptiveConcurrency})
	limits := serve(t, e, clk, 30, 5, func(int) time.Duration { return 10 * time.Millisecond })
	if got := limits[len(limits)-1]; got != DefaultInitialLimit {
		t.Fatalf("5 in flight, never refused: limit %v, want it to stay %d", limits, DefaultInitialLimit)
	}
}

func TestAdaptiveBlockErrorCarriesCurrentLimit(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "a", Resource: "r", Algorithm: AlgoAdaptiveConcurrency, InitialLimit: 3})
	ps, be := hold(t, e, "r", 4)
	if len(ps) != 3 || be == nil || be.Limit != 3 || be.Reason != ReasonConcurrency {
		t.Fatalf("initialLimit 3: %d admitted, %+v", len(ps), be)
	}
}

func TestAdaptiveValidation(t *testing.T) {
	bad := []Rule{
		{ID: "a", Resource: "r", Algorithm: AlgoAdaptiveConcurrency, Limit: 5, Window: time.Second},
		{ID: "b", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 5, InitialLimit: 3, Tolerance: 2, Smoothing: 0.5},
		{ID: "c", Resource: "r", Algorithm: AlgoAdaptiveConcurrency, MinLimit: 10, MaxLimit: 5, Tolerance: 0.5, Smoothing: 2},
		{ID: "d", Resource: "r", Algorithm: AlgoAdaptiveConcurrency, Adaptive: true, Cluster: &ClusterSpec{}},
	}
	err := ValidateRules(bad)
	for _, want := range []string{
		`rules[0] (id "a"): limit: does not apply to adaptive_concurrency`,
		`rules[0] (id "a"): window: does not apply to adaptive_concurrency`,
		`rules[1] (id "b"): initialLimit: only for adaptive_concurrency rules`,
		`rules[1] (id "b"): tolerance: only for adaptive_concurrency rules`,
		`rules[1] (id "b"): smoothing: only for adaptive_concurrency rules`,
		`rules[2] (id "c"): minLimit: must be <= maxLimit (5), not 10`,
		`rules[2] (id "c"): tolerance: must be in [1, 100], not 0.5`,
		`rules[2] (id "c"): smoothing: must be in (0, 1], not 2`,
		`rules[3] (id "d"): adaptive: does not apply to adaptive_concurrency`,
		`rules[3] (id "d"): cluster: not supported for adaptive_concurrency`,
	} {
		if err == nil || !containsLine(err.Error(), want) {
			t.Errorf("want a line starting %q in:\n%v", want, err)
		}
	}
	ok := Rule{ID: "ok", Resource: "r", Level: LevelUser, Algorithm: AlgoAdaptiveConcurrency, InitialLimit: 5, MaxLimit: 50}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a user-level adaptive rule: %v", err)
	}
	if d := ok.WithDefaults(); d.MinLimit != 1 || d.Tolerance != 1.5 || d.Smoothing != 0.2 || d.Window != 0 || *d.Reserve != DefaultReserve {
		t.Fatalf("defaults: %+v", d)
	}
}

func TestAdaptivePerUserLimits(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "a", Resource: "r", Level: LevelUser, Algorithm: AlgoAdaptiveConcurrency, InitialLimit: 2, MaxKeys: 10})
	a, _ := hold(t, e, "r", 3, WithUser("a"))
	b, _ := hold(t, e, "r", 3, WithUser("b"))
	if len(a) != 2 || len(b) != 2 {
		t.Fatalf("per user initialLimit 2: a %d, b %d", len(a), len(b))
	}
}

// TestAdaptiveAllocations: Entry+Exit through an adaptive_concurrency rule,
// with a priority, allocates nothing, including the Exits that close a
// window and move the limit.
func TestAdaptiveAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumented builds allocate")
	}
	e, clk := newTestEngine(t, Rule{ID: "a", Resource: "r", Algorithm: AlgoAdaptiveConcurrency, InitialLimit: 4})
	var ps [8]Permit
	round := func() {
		n := 0
		for ; n < len(ps); n++ {
			p, err := e.Entry("r", WithPriority(PriorityHigh))
			if err != nil {
				break // the limit refused: that is what makes it grow
			}
			ps[n] = p
		}
		clk.Advance(time.Millisecond)
		for _, p := range ps[:n] {
			p.Exit()
		}
	}
	for range 50 {
		round()
	}
	before := adaptiveStats(t, e)
	if before.Limit < int64(len(ps)) {
		t.Fatalf("limit %d after 50 refused rounds, want it grown to %d", before.Limit, len(ps))
	}
	// Nothing is refused now (a refusal's BlockError is its one allocation).
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Errorf("a round of 8 calls: %v allocs, want 0", n)
	}
	pass := func() {
		p, err := e.Entry("r", WithPriority(PriorityCritical))
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Millisecond)
		p.Exit()
	}
	if n := testing.AllocsPerRun(1000, pass); n != 0 {
		t.Errorf("Entry+Exit through adaptive_concurrency: %v allocs, want 0", n)
	}
	if after := adaptiveStats(t, e); after.ShortRTT != time.Millisecond {
		t.Fatalf("the limit did not move through windows: %+v -> %+v", before, after)
	}
}
