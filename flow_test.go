package flowgate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

var epoch = time.Unix(0, 0)

// step is one call at a moment (offset from the start) with its expected
// outcome: "pass", or the id of the rule that refuses it.
type step struct {
	at       time.Duration
	resource string
	user, ip string
	want     string
	retry    time.Duration // when > 0, the BlockError's RetryAfter
}

func run(t *testing.T, eng *flow.Engine, clk *clock.Fake, steps []step) {
	t.Helper()
	for i, s := range steps {
		clk.Set(epoch.Add(s.at))
		p, err := eng.Entry(s.resource, flow.WithUser(s.user), flow.WithIP(s.ip))
		got := "pass"
		var be *flow.BlockError
		switch {
		case errors.As(err, &be):
			got = be.RuleID
		case err != nil:
			t.Fatalf("step %d: %v", i, err)
		default:
			p.Exit()
		}
		if got != s.want {
			t.Fatalf("step %d (%v %s user %q ip %q): got %s, want %s", i, s.at, s.resource, s.user, s.ip, got, s.want)
		}
		if s.retry > 0 && be.RetryAfter != s.retry {
			t.Fatalf("step %d: RetryAfter %v, want %v", i, be.RetryAfter, s.retry)
		}
	}
}

const ms = time.Millisecond

// TestEveryAlgorithmAndLevel drives one engine holding a rule of every
// algorithm, at every level, on virtual time, and checks each call.
func TestEveryAlgorithmAndLevel(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := flow.NewEngine(flow.WithClock(clk))
	err := eng.LoadRules([]flow.Rule{
		{ID: "tb", Resource: "api", Algorithm: flow.AlgoTokenBucket, Limit: 2, Burst: 2},
		{ID: "wu", Resource: "cache", Algorithm: flow.AlgoWarmUp, Limit: 10, Warmup: time.Second},
		{ID: "lb", Resource: "export", Level: flow.LevelIP, Algorithm: flow.AlgoLeakyBucket, Limit: 2},
		{ID: "fw", Resource: "search", Level: flow.LevelUser, Algorithm: flow.AlgoFixedWindow, Limit: 2},
		{ID: "sw", Resource: "feed", Algorithm: flow.AlgoSlidingWindow, Limit: 4, Buckets: 2},
		{ID: "sl", Resource: "pay", Level: flow.LevelUser, Algorithm: flow.AlgoSlidingLog, Limit: 2},
		{ID: "ip", Resource: "orders", Level: flow.LevelIP, Algorithm: flow.AlgoFixedWindow, Limit: 3, Window: time.Minute},
		{ID: "user", Resource: "orders", Level: flow.LevelUser, Algorithm: flow.AlgoFixedWindow, Limit: 2, Window: time.Minute},
		{ID: "global", Resource: "orders", Algorithm: flow.AlgoFixedWindow, Limit: 4, Window: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, eng, clk, []step{
		// token_bucket 2/s, burst 2, starts full. Guava: once the stored
		// permits are spent, one more call goes through and the next pays.
		{at: 0, resource: "api", want: "pass"},
		{at: 0, resource: "api", want: "pass"},
		{at: 0, resource: "api", want: "pass"},
		{at: 0, resource: "api", want: "tb", retry: 500 * ms},
		// warm_up 10/s over 1s, cold factor 3: starts cold; each permit
		// costs less than the one before (280ms, 240ms, ...) down to 100ms.
		{at: 0, resource: "cache", want: "pass"},
		{at: 0, resource: "cache", want: "wu", retry: 280 * ms},
		// leaky_bucket 2/s per IP: calls 500ms apart, no burst, IPs apart.
		{at: 0, resource: "export", ip: "x", want: "pass"},
		{at: 0, resource: "export", ip: "x", want: "lb", retry: 500 * ms},
		{at: 0, resource: "export", ip: "y", want: "pass"},
		{at: 0, resource: "export", want: "pass"}, // no IP: not checked
		// sliding_window 4/s in two 500ms sub-windows.
		{at: 0, resource: "feed", want: "pass"},
		{at: 0, resource: "feed", want: "pass"},
		{at: 0, resource: "feed", want: "pass"},
		{at: 0, resource: "feed", want: "pass"},
		{at: 0, resource: "feed", want: "sw"},
		// three levels: ip 3/min, user 2/min, global 4/min. Refused calls
		// give back what earlier levels took.
		{at: 0, resource: "orders", ip: "a", user: "u1", want: "pass"},
		{at: 0, resource: "orders", ip: "a", user: "u1", want: "pass"},
		{at: 0, resource: "orders", ip: "a", user: "u1", want: "user"},
		{at: 0, resource: "orders", ip: "a", user: "u2", want: "pass"},
		{at: 0, resource: "orders", ip: "a", user: "u3", want: "ip"},
		{at: 0, resource: "orders", ip: "b", user: "u3", want: "pass"},
		{at: 0, resource: "orders", ip: "c", user: "u4", want: "global"},
		{at: 0, resource: "orders", ip: "a", want: "ip"},
		{at: 0, resource: "orders", user: "u5", want: "global"},
		{at: 280 * ms, resource: "cache", want: "pass"},
		{at: 280 * ms, resource: "cache", want: "wu", retry: 240 * ms},
		{at: 500 * ms, resource: "api", want: "pass"},
		{at: 500 * ms, resource: "api", want: "tb"},
		{at: 500 * ms, resource: "export", ip: "x", want: "pass"},
		{at: 500 * ms, resource: "export", ip: "x", want: "lb"},
		{at: 520 * ms, resource: "cache", want: "pass"},
		// fixed_window 2/s per user: 2 just before the boundary and 2 just
		// after it — 4 in 100ms, the documented 2x.
		{at: 900 * ms, resource: "search", user: "a", want: "pass"},
		{at: 900 * ms, resource: "search", user: "a", want: "pass"},
		{at: 900 * ms, resource: "search", user: "a", want: "fw"},
		{at: 900 * ms, resource: "search", user: "b", want: "pass"},
		// sliding_log 2/s per user: exact, no 2x across a boundary.
		{at: 900 * ms, resource: "pay", user: "a", want: "pass"},
		{at: 900 * ms, resource: "pay", user: "a", want: "pass"},
		{at: 900 * ms, resource: "pay", user: "a", want: "sl"},
		{at: 1000 * ms, resource: "search", user: "a", want: "pass"},
		{at: 1000 * ms, resource: "search", user: "a", want: "pass"},
		{at: 1000 * ms, resource: "search", user: "a", want: "fw"},
		{at: 1000 * ms, resource: "pay", user: "a", want: "sl"},
		{at: 1000 * ms, resource: "feed", want: "sw"},   // the first sub-window still counts whole
		{at: 1250 * ms, resource: "feed", want: "pass"}, // ... now half: 4*0.5 = 2 counted
		{at: 1250 * ms, resource: "feed", want: "pass"},
		{at: 1250 * ms, resource: "feed", want: "sw"},
		{at: 1500 * ms, resource: "feed", want: "pass"}, // only the 2 of 1.25s remain
		{at: 1500 * ms, resource: "feed", want: "pass"},
		{at: 1500 * ms, resource: "feed", want: "sw"},
		{at: 1900 * ms, resource: "pay", user: "a", want: "pass"},
		{at: 1900 * ms, resource: "pay", user: "a", want: "pass"},
		{at: 1900 * ms, resource: "pay", user: "a", want: "sl"},
		// token bucket idle from 1s (its next free moment) to 2s: full again.
		{at: 2000 * ms, resource: "api", want: "pass"},
		{at: 2000 * ms, resource: "api", want: "pass"},
		{at: 2000 * ms, resource: "api", want: "pass"},
		{at: 2000 * ms, resource: "api", want: "tb"},
		// a new minute: the three-level quotas are back.
		{at: time.Minute, resource: "orders", ip: "c", user: "u4", want: "pass"},
	})
	snap := eng.Snapshot()
	var orders flow.ResourceStats
	for _, r := range snap.Resources {
		if r.Resource == "orders" {
			orders = r
		}
	}
	if orders.Passed != 5 || orders.Blocked[flow.LevelIP] != 2 || orders.Blocked[flow.LevelUser] != 1 || orders.Blocked[flow.LevelGlobal] != 2 {
		t.Fatalf("orders stats: passed %d blocked %v", orders.Passed, orders.Blocked)
	}
}

// TestConcurrencyAndQueueing: a concurrency cap released by Exit, and a
// leaky bucket whose callers queue (MaxWait) on virtual time.
func TestConcurrencyAndQueueing(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := flow.NewEngine(flow.WithClock(clk))
	err := eng.LoadRules([]flow.Rule{
		{ID: "cc", Resource: "db", Algorithm: flow.AlgoConcurrency, Limit: 2},
		{ID: "q", Resource: "mail", Algorithm: flow.AlgoLeakyBucket, Limit: 4, MaxWait: 600 * ms},
	})
	if err != nil {
		t.Fatal(err)
	}
	p1, err1 := eng.Entry("db")
	p2, err2 := eng.Entry("db")
	if err1 != nil || err2 != nil {
		t.Fatalf("two in flight: %v %v", err1, err2)
	}
	if _, err := eng.Entry("db"); !errors.Is(err, flow.ErrBlocked) {
		t.Fatalf("third in flight: got %v, want blocked", err)
	}
	p1.Exit()
	p3, err := eng.Entry("db")
	if err != nil {
		t.Fatalf("after an Exit: %v", err)
	}
	p2.Exit()
	p3.Exit()

	// 4/s: slots 250ms apart; each call waits for its slot, at most 600ms.
	var waits []time.Duration
	for range 4 {
		p, err := eng.Entry("mail", flow.WithContext(context.Background()))
		if err != nil {
			waits = append(waits, -1)
			continue
		}
		waits = append(waits, p.Waited())
		p.Exit()
	}
	want := []time.Duration{0, 250 * ms, 250 * ms, 250 * ms}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits: got %v, want %v", waits, want)
		}
	}
	if got := clk.Now().Sub(epoch); got != 750*ms {
		t.Fatalf("virtual time after queueing: %v, want 750ms", got)
	}
}
