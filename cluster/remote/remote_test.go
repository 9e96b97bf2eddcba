package remote

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// TestRemoteSuite runs the token server's behaviour through two serve
// replicas and three client engines: the engine must not tell the remote
// client from the embedded RedisTokenServer.
func TestRemoteSuite(t *testing.T) {
	srv := redistest.Start(t)
	_, addrs := redisReplicas(t, srv, 2)
	rdb := srv.Client()
	// A global limit holds exactly: 3 engines x 8 goroutines x 50 calls
	// at 1000 per window, in one window, admit exactly 1000. The window is
	// long so the run fits in it on loaded cores (see runSuite).
	const window, need = time.Hour, 30 * time.Second
	for _, algo := range []flow.Algorithm{flow.AlgoFixedWindow, flow.AlgoSlidingLog, flow.AlgoSlidingWindow} {
		t.Run(algo.String()+" exact", func(t *testing.T) {
			res := uniq("remote-" + algo.String())
			es, cs := remoteEngines(t, addrs, 3, crule("r", res, algo, 1000, window))
			waitWindowStart(t, rdb, window, need)
			start := redisNow(t, rdb)
			passed, refused := hammer(t, es, 8, res, 50, nil)
			if el := redisNow(t, rdb).Sub(start); el > need {
				t.Fatalf("run took %v: not inside one window", el)
			}
			if passed != 1000 || refused != 200 {
				t.Fatalf("passed %d refused %d, want exactly 1000 and 200", passed, refused)
			}
			for i, c := range cs {
				if st := c.Stats(); st.Passed+st.Blocked == 0 || st.Errors != 0 {
					t.Errorf("client %d: %+v, want decisions and no errors", i, st)
				}
			}
		})
	}
	// Rate algorithms never admit more than rate x time (+ burst). The
	// callers never stop, but each call is a gRPC hop plus a Redis round
	// trip on shared cores, so the lower bound only says they were served.
	for _, tt := range []struct {
		name  string
		rule  flow.Rule
		bound func(time.Duration) float64
	}{
		{"token_bucket", func() flow.Rule {
			r := crule("r", "", flow.AlgoTokenBucket, 200, time.Second)
			r.Burst = 50
			return r
		}(), func(d time.Duration) float64 { return 50 + 200*d.Seconds() + 1 }},
		{"warm_up", func() flow.Rule {
			r := crule("r", "", flow.AlgoWarmUp, 200, time.Second)
			r.Warmup = time.Second
			return r
		}(), coldBound},
		{"leaky_bucket", crule("r", "", flow.AlgoLeakyBucket, 200, time.Second),
			func(d time.Duration) float64 { return 200*d.Seconds() + 1 }},
	} {
		t.Run(tt.name+" bound", func(t *testing.T) {
			r := tt.rule
			r.Resource = uniq("remote-" + tt.name)
			es, _ := remoteEngines(t, addrs, 3, r)
			start := redisNow(t, rdb)
			passed, busy := hammerFor(t, es, 6, r.Resource, 500*time.Millisecond, 5*time.Millisecond)
			el := redisNow(t, rdb).Sub(start)
			if bound, least := tt.bound(el), 0.4*tt.bound(busy); float64(passed) > bound || float64(passed) < least {
				t.Fatalf("passed %d in %v (callers answered for %v), want %.1f..%.1f", passed, el, busy, least, bound)
			}
		})
	}
	t.Run("multi-rule atomic", func(t *testing.T) {
		res := uniq("remote-multi")
		es, _ := remoteEngines(t, addrs, 2, crule("fw", res, flow.AlgoFixedWindow, 5, time.Hour),
			crule("log", res, flow.AlgoSlidingLog, 3, time.Hour), crule("tb", res, flow.AlgoTokenBucket, 4, time.Hour))
		var refusedBy []string
		for i := range 6 {
			_, err := es[i%2].Entry(res)
			var be *flow.BlockError
			if errors.As(err, &be) {
				if be.Reason != flow.ReasonClusterLimited || be.RetryAfter <= 0 {
					t.Fatalf("block %+v, want %q with a retry-after", be, flow.ReasonClusterLimited)
				}
				refusedBy = append(refusedBy, be.RuleID)
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if len(refusedBy) != 3 || refusedBy[0] != "log" {
			t.Fatalf("refused by %v, want 3 refusals by log", refusedBy)
		}
		c, err := rdb.HGet(context.Background(), "flowgate:{"+res+"|global|}:fw", "c").Int()
		if err != nil || c != 3 {
			t.Fatalf("fixed window counted %d (%v), want 3", c, err)
		}
	})
	t.Run("concurrency", func(t *testing.T) {
		r := crule("r", uniq("remote-conc"), flow.AlgoConcurrency, 4, time.Second)
		es, _ := remoteEngines(t, addrs, 3, r)
		var inFlight, peak atomic.Int64
		hold := func() {
			n := inFlight.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Millisecond) // hold the permit while others try
			inFlight.Add(-1)
		}
		passed, refused := hammer(t, es, 4, r.Resource, 15, hold)
		if p := peak.Load(); p > 4 || passed == 0 || refused == 0 {
			t.Fatalf("peak in flight %d (cap 4), passed %d, refused %d", p, passed, refused)
		}
		if n, err := rdb.ZCard(context.Background(), "flowgate:{"+r.Resource+"|global|}:r").Result(); err != nil || n != 0 {
			t.Fatalf("permits left after every Exit: %d (%v), want 0", n, err)
		}
	})
	t.Run("user keys and refund", func(t *testing.T) {
		res := uniq("remote-keyed")
		u := crule("u", res, flow.AlgoFixedWindow, 2, time.Hour)
		u.Level = flow.LevelUser
		ip := crule("ip", res, flow.AlgoSlidingLog, 3, time.Hour)
		ip.Level = flow.LevelIP
		es, _ := remoteEngines(t, addrs, 2, u, ip)
		var got []string
		for i, o := range [][2]string{{"alice", "10.0.0.1"}, {"alice", "10.0.0.1"}, {"alice", "10.0.0.1"}, {"bob", "10.0.0.1"}, {"bob", "10.0.0.1"}} {
			p, err := es[i%2].Entry(res, flow.WithUser(o[0]), flow.WithIP(o[1]))
			var be *flow.BlockError
			switch {
			case err == nil:
				p.Exit()
				got = append(got, "pass")
			case errors.As(err, &be):
				got = append(got, be.RuleID)
			default:
				t.Fatal(err)
			}
		}
		// alice's third call is refused by the user rule after the ip rule
		// counted it; the refund leaves 10.0.0.1 room for both of bob's.
		want := []string{"pass", "pass", "u", "pass", "ip"}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	})
	t.Run("leaky queueing waits", func(t *testing.T) {
		r := crule("r", uniq("remote-leaky"), flow.AlgoLeakyBucket, 100, time.Second) // 10ms apart
		r.MaxWait = 200 * time.Millisecond
		es, _ := remoteEngines(t, addrs, 1, r)
		var waited time.Duration
		for range 10 {
			p, err := es[0].Entry(r.Resource)
			if err != nil {
				t.Fatal(err)
			}
			waited = max(waited, p.Waited())
			p.Exit()
		}
		// Ten calls in a row, each quicker than 10ms, take slots 10ms apart:
		// later ones are told to wait.
		if waited <= 0 || waited > r.MaxWait {
			t.Fatalf("longest wait %v, want in (0, %v]", waited, r.MaxWait)
		}
	})
}
