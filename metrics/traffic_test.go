package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testRules: GET /orders is limited per IP (2/min), per user (3/min) and
// globally (10/min, adaptive); GET /slow queues calls 100ms apart, under a
// shadow rule of 2/min; idle has a rule and never sees a call.
func testRules() []flow.Rule {
	return []flow.Rule{
		{ID: "orders-ip", Resource: "GET /orders", Level: flow.LevelIP, Algorithm: flow.AlgoFixedWindow, Limit: 2, Window: time.Minute},
		{ID: "orders-user", Resource: "GET /orders", Level: flow.LevelUser, Algorithm: flow.AlgoFixedWindow, Limit: 3, Window: time.Minute},
		{ID: "orders", Resource: "GET /orders", Level: flow.LevelGlobal, Algorithm: flow.AlgoFixedWindow, Limit: 10, Window: time.Minute, Adaptive: true},
		{ID: "slow", Resource: "GET /slow", Level: flow.LevelGlobal, Algorithm: flow.AlgoLeakyBucket, Limit: 10, Window: time.Second, MaxWait: time.Second},
		{ID: "slow-try", Resource: "GET /slow", Level: flow.LevelGlobal, Algorithm: flow.AlgoFixedWindow, Limit: 2, Window: time.Minute, Shadow: true},
		{ID: "idle-tb", Resource: "idle", Level: flow.LevelGlobal, Algorithm: flow.AlgoTokenBucket, Limit: 5, Window: time.Second},
		{ID: "idle-breaker", Resource: "idle", Algorithm: flow.AlgoCircuitBreaker, Strategy: flow.BreakerErrorRatio,
			Threshold: 0.5, OpenFor: 30 * time.Second},
		{ID: "slow-origins", Resource: "GET /slow", Level: flow.LevelParam, Param: "origin", Algorithm: flow.AlgoDeny,
			Values: []string{"scraper"}},
	}
}

// traffic is what driveTraffic did, worked out from the rules above.
type traffic struct {
	ordersRT []float64 // response times of completed GET /orders calls, seconds
	slowWait []float64 // waits of GET /slow calls that queued, seconds
	slowRT   []float64
	held     flow.Permit // one GET /orders call still in flight
}

// driveTraffic runs a fixed scenario on virtual time and checks each
// decision as it goes, so the metric tests can rely on the counts:
//
//	GET /orders  passed 10, waited 0, blocked ip 1, user 1, global 2;
//	             9 completed after 20ms each (one with an error), 1 in flight
//	GET /slow    passed 1 at once, 2 after queueing 100ms; all exit at once;
//	             the shadow rule slow-try would have refused the third
//	idle         nothing
//
// and finally sets the adaptive factor to 0.5 and the system limit to 100.
func driveTraffic(t testing.TB) (*flow.Engine, *clock.Fake, *traffic) {
	t.Helper()
	clk := clock.NewFake(t0)
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules(testRules()); err != nil {
		t.Fatalf("LoadRules: %v", err)
	}
	tr := &traffic{}
	const rt = 20 * time.Millisecond
	call := func(want string, last bool, opts ...flow.EntryOption) {
		t.Helper()
		p, err := eng.Entry("GET /orders", opts...)
		if want != "pass" {
			var be *flow.BlockError
			if !errors.As(err, &be) || be.Level.String() != want {
				t.Fatalf("Entry: got %v, want blocked at %s", err, want)
			}
			return
		}
		if err != nil {
			t.Fatalf("Entry: got %v, want a pass", err)
		}
		if last {
			tr.held = p
			return
		}
		clk.Advance(rt)
		if len(tr.ordersRT) == 0 {
			p.Exit(flow.WithError(errors.New("upstream failed")))
		} else {
			p.Exit()
		}
		tr.ordersRT = append(tr.ordersRT, rt.Seconds())
	}
	u1A := []flow.EntryOption{flow.WithUser("u1"), flow.WithIP("10.0.0.1")}
	u1B := []flow.EntryOption{flow.WithUser("u1"), flow.WithIP("10.0.0.2")}
	call("pass", false, u1A...)
	call("pass", false, u1A...)
	call("ip", false, u1A...) // 10.0.0.1 used its 2
	call("pass", false, u1B...)
	call("user", false, u1B...) // u1 used its 3
	for i := range 7 {          // anonymous: only the global rule applies
		call("pass", i == 6)
	}
	call("global", false) // 10 passed this minute
	call("global", false)

	for i := range 3 {
		p, err := eng.Entry("GET /slow")
		if err != nil {
			t.Fatalf("GET /slow #%d: %v", i, err)
		}
		want := 100 * time.Millisecond
		if i == 0 {
			want = 0
		}
		if got := p.Waited(); got != want {
			t.Fatalf("GET /slow #%d waited %v, want %v", i, got, want)
		}
		if want > 0 {
			tr.slowWait = append(tr.slowWait, want.Seconds())
		}
		p.Exit()
		tr.slowRT = append(tr.slowRT, 0)
	}

	if got := eng.Snapshot().Rules[4].ShadowBlocked; got != 1 {
		t.Fatalf("slow-try ShadowBlocked = %d, want 1", got)
	}

	// A deny list refuses one GET /slow call: nothing taken, nothing waited.
	if _, err := eng.Entry("GET /slow", flow.WithParam("origin", "scraper")); err == nil {
		t.Fatal("GET /slow from a denied origin passed")
	}

	if _, err := eng.Entry("no rules here"); err != nil {
		t.Fatalf("a resource without rules: %v", err)
	}
	eng.SetAdaptiveFactor(0.5)
	eng.SetSystemLimit(100)
	return eng, clk, tr
}

// fakeEngine is an engine on a fake clock at t0 with rules loaded.
func fakeEngine(t *testing.T, rules []flow.Rule) *flow.Engine {
	t.Helper()
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(t0)))
	if err := eng.LoadRules(rules); err != nil {
		t.Fatal(err)
	}
	return eng
}
