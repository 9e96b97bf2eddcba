package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/judge"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

func TestSuiteSingleRedis(t *testing.T) {
	srv := redistest.Start(t)
	runSuite(t, backend{"single", func(t *testing.T) redis.UniversalClient { return srv.NewClient(nil) }})
}

func TestSuiteRedisCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	runSuite(t, backend{"cluster", func(t *testing.T) redis.UniversalClient { return c.NewClient(nil) }})
}

// engines returns n engines, each with its own client and token server,
// whose fake clocks disagree by seconds: time comes from Redis.
func engines(t *testing.T, b backend, n int, rules ...flow.Rule) ([]*flow.Engine, []*RedisTokenServer, redis.UniversalClient) {
	t.Helper()
	var es []*flow.Engine
	var ts []*RedisTokenServer
	for i := range n {
		s := newServer(t, b.client(t))
		ts = append(ts, s)
		es = append(es, newEngine(t, s, t0.Add(time.Duration(i*i)*3*time.Second-5*time.Second), rules...))
	}
	return es, ts, b.client(t)
}

func runSuite(t *testing.T, b backend) {
	// Exact algorithms: 4 engines x 8 goroutines, 1600 calls at a limit of
	// 1000 per window, inside one window, admit exactly 1000. Exactness is
	// about atomicity, not the window's length; the window is long so the
	// run fits in it however loaded the cores (1600 calls took over 2s
	// under -race with both cores busy).
	const window, need = time.Hour, 30 * time.Second
	for _, algo := range []flow.Algorithm{flow.AlgoFixedWindow, flow.AlgoSlidingLog, flow.AlgoSlidingWindow} {
		t.Run(algo.String()+" exact", func(t *testing.T) {
			res := uniq(algo.String())
			es, _, rdb := engines(t, b, 4, crule("r", res, algo, 1000, window))
			waitWindowStart(t, rdb, window, need)
			start := redisNow(t, rdb)
			passed, refused := hammer(t, es, 8, res, 50, nil)
			if el := redisNow(t, rdb).Sub(start); el > need {
				t.Fatalf("run took %v: not inside one window", el)
			}
			if passed != 1000 || refused != 600 {
				t.Fatalf("passed %d refused %d, want exactly 1000 and 600", passed, refused)
			}
		})
	}
	// Rate algorithms never admit more than rate x time (+ burst).
	rates := []struct {
		name  string
		rule  flow.Rule
		bound func(elapsed time.Duration) float64 // most admissions in elapsed
		least float64                             // fraction of bound that must pass
	}{
		{"token_bucket", func() flow.Rule {
			r := crule("r", "", flow.AlgoTokenBucket, 200, time.Second)
			r.Burst = 50
			return r
		}(), func(d time.Duration) float64 { return 50 + 200*d.Seconds() + 1 }, 0.7},
		{"warm_up", func() flow.Rule {
			r := crule("r", "", flow.AlgoWarmUp, 200, time.Second)
			r.Warmup = time.Second
			return r
		}(), coldBound, 0.7},
		// A leaky bucket saves no idle time: each admission also loses the
		// delay from its slot opening to the next call reaching Redis, on
		// loaded cores a good part of the 5ms spacing. So without MaxWait
		// at least half the rate passes (a spacing twice too long fails),
		// and with a MaxWait of one spacing, which lets a call that comes
		// early wait for its slot, nearly all of it.
		{"leaky_bucket", crule("r", "", flow.AlgoLeakyBucket, 200, time.Second),
			func(d time.Duration) float64 { return 200*d.Seconds() + 1 }, 0.5},
		{"leaky_bucket queued", func() flow.Rule {
			r := crule("r", "", flow.AlgoLeakyBucket, 200, time.Second)
			r.MaxWait = 5 * time.Millisecond
			return r
		}(), func(d time.Duration) float64 { return 200*d.Seconds() + 2 }, 0.8},
	}
	for _, tt := range rates {
		t.Run(tt.name+" bound", func(t *testing.T) {
			r := tt.rule
			r.Resource = uniq(tt.name)
			es, _, rdb := engines(t, b, 4, r)
			start := redisNow(t, rdb)
			passed, busy := hammerFor(t, es, 8, r.Resource, 500*time.Millisecond, 5*time.Millisecond)
			el := redisNow(t, rdb).Sub(start)
			// Never more than the algorithm allows in the whole elapsed
			// Redis time; and the callers never stop asking, so most of
			// what may pass in the time they were being answered does.
			bound, least := tt.bound(el), tt.least*tt.bound(busy)
			if float64(passed) > bound || float64(passed) < least {
				t.Fatalf("passed %d in %v (callers answered for %v), want %.1f..%.1f", passed, el, busy, least, bound)
			}
			t.Logf("passed %d in %v, answered for %v (want %.1f..%.1f)", passed, el, busy, least, bound)
		})
	}
	t.Run("leaky_bucket queueing", func(t *testing.T) { leakyQueueing(t, b) })
	t.Run("token_bucket queueing", func(t *testing.T) { bucketQueueing(t, b) })
	t.Run("cancelled wait gives the slot back", func(t *testing.T) { cancelledWait(t, b) })
	t.Run("concurrency", func(t *testing.T) { concurrencyCap(t, b) })
	t.Run("multi-rule atomic", func(t *testing.T) { multiRuleAtomic(t, b) })
	t.Run("user and ip keys", func(t *testing.T) { keyedLevels(t, b) })
}

// leakyQueueing: with MaxWait, admitted calls are told to wait for slots
// spaced by Window/Limit; none is further away than MaxWait.
func leakyQueueing(t *testing.T, b backend) {
	r := crule("r", uniq("leaky-q"), flow.AlgoLeakyBucket, 1000, time.Second) // 1ms spacing
	r.MaxWait = 20 * time.Millisecond
	es, _, rdb := engines(t, b, 4, r)
	var maxWait atomic.Int64
	start := redisNow(t, rdb)
	passed := int64(0)
	for _, e := range es {
		for range 10 {
			p, err := e.Entry(r.Resource)
			if err != nil {
				if !errors.Is(err, flow.ErrBlocked) {
					t.Fatal(err)
				}
				continue
			}
			passed++
			if w := int64(p.Waited()); w > maxWait.Load() {
				maxWait.Store(w)
			}
			p.Exit()
		}
	}
	el := redisNow(t, rdb).Sub(start)
	// Slots are 1ms apart and at most 20ms ahead of Redis's now.
	if bound := el.Seconds()*1000 + 21; float64(passed) > bound {
		t.Fatalf("passed %d in %v, want <= %.0f", passed, el, bound)
	}
	if w := time.Duration(maxWait.Load()); w <= 0 || w > r.MaxWait {
		t.Fatalf("longest wait %v, want in (0, %v]", w, r.MaxWait)
	}
}

// bucketQueueing: Guava's order on Redis's clock. With a burst of 1 at
// 10/s and MaxWait, back-to-back calls wait 0 (the stored permit), 0 (it
// pays nothing itself, the next one pays), then 100ms more each.
func bucketQueueing(t *testing.T, b backend) {
	judge.Retry(t, 3, func(int) error { return bucketQueueingTry(t, b) })
}

// bucketQueueingTry is one try of bucketQueueing on a fresh key. The waits
// are Redis's, on real time: each is shorter than its slot by the time the
// calls before it took. A try that took long enough for that to matter
// (a loaded machine) and missed is returned as unjudged.
func bucketQueueingTry(t *testing.T, b backend) error {
	r := crule("r", uniq("tb-q"), flow.AlgoTokenBucket, 10, time.Second)
	r.Burst, r.MaxWait = 1, time.Second
	es, _, _ := engines(t, b, 2, r)
	start := time.Now()
	var waits []time.Duration
	for i := range 5 {
		p, err := es[i%2].Entry(r.Resource)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, p.Waited())
		p.Exit()
	}
	want := []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	var err error
	for i, w := range want {
		if d := w - waits[i]; d < 0 || d > 20*time.Millisecond {
			err = fmt.Errorf("waits %v, want about %v", waits, want)
		}
	}
	if err == nil {
		if _, e := es[0].Entry(r.Resource, flow.WithTokens(8)); e != nil {
			err = fmt.Errorf("Guava grants a large request when only 400ms are owed: %v", e)
		} else if _, e := es[1].Entry(r.Resource); !errors.Is(e, flow.ErrBlocked) {
			err = fmt.Errorf("after 8 more permits the next slot is over a second away: got %v, want blocked", e)
		}
	}
	// 20ms is the slack the waits allow for the calls' own time; a try
	// that took longer says nothing.
	if el := time.Since(start); err != nil && el > 20*time.Millisecond {
		return fmt.Errorf("%w (the try took %v: %w)", err, el, judge.ErrUnjudged)
	}
	return err
}

// cancelledWait: a call whose wait for its leaky-bucket slot is cancelled
// gives the slot back (the engine undoes it through Release), so the next
// call gets that slot, not the one after.
func cancelledWait(t *testing.T, b backend) {
	judge.Retry(t, 3, func(int) error { return cancelledWaitTry(t, b) })
}

// cancelledWaitTry: the slots are 100ms apart on Redis's clock, which
// moves on by at most el between the first call and the third. So the
// third call waits for the given-back slot at least 100ms-el and at most
// 100ms; for the slot after it, at least 200ms-el. A try that took 99ms or
// more cannot tell the two apart: judge.ErrUnjudged.
func cancelledWaitTry(t *testing.T, b backend) error {
	r := crule("r", uniq("leaky-cancel"), flow.AlgoLeakyBucket, 10, time.Second) // 100ms spacing
	r.MaxWait = time.Second
	ts := newServer(t, b.client(t))
	e := newEngine(t, cancelAfterAcquire{ts}, t0, r)
	start := time.Now()
	p, err := e.Entry(r.Resource)
	if err != nil {
		t.Fatal(err)
	}
	p.Exit()
	// The slot is granted, then the caller gives up while waiting for it.
	ctx, cancel := context.WithCancel(context.Background())
	ctx = context.WithValue(ctx, cancelKey{}, cancel)
	if _, err := e.Entry(r.Resource, flow.WithContext(ctx)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v, want context.Canceled", err)
	}
	p, err = e.Entry(r.Resource)
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	w := p.Waited()
	p.Exit()
	const spacing, grain = 100 * time.Millisecond, time.Millisecond // grain: Redis's clock in whole µs, rounding
	if w > spacing-el-grain && w <= spacing+grain {
		return nil
	}
	err = fmt.Errorf("next call waited %v, %v after the first call, want the given-back slot (%v to %v ahead), not the one after it", w, el, spacing-el, spacing)
	if el >= spacing-grain {
		return fmt.Errorf("%w: %w", err, judge.ErrUnjudged)
	}
	return err
}

// cancelAfterAcquire cancels the call's context (its cancelKey value)
// once the token server has answered: the caller gives up while waiting.
type cancelAfterAcquire struct{ *RedisTokenServer }

type cancelKey struct{}

func (c cancelAfterAcquire) Acquire(ctx context.Context, req flow.TokenRequest) (flow.TokenResult, error) {
	res, err := c.RedisTokenServer.Acquire(ctx, req)
	if cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
	return res, err
}

// concurrencyCap: in flight across engines never exceeds the cluster cap,
// and every permit is gone from Redis after Exit.
func concurrencyCap(t *testing.T, b backend) {
	r := crule("r", uniq("conc"), flow.AlgoConcurrency, 5, time.Second)
	es, _, rdb := engines(t, b, 4, r)
	var inFlight, peak atomic.Int64
	hold := func() {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(200 * time.Microsecond) // hold the permit while others try
		inFlight.Add(-1)
	}
	passed, refused := hammer(t, es, 8, r.Resource, 20, hold)
	if p := peak.Load(); p > 5 || passed == 0 || refused == 0 {
		t.Fatalf("peak in flight %d (cap 5), passed %d, refused %d", p, passed, refused)
	}
	key := "flowgate:{" + r.Resource + "|global|}:r"
	if n, err := rdb.ZCard(context.Background(), key).Result(); err != nil || n != 0 {
		t.Fatalf("permits left in Redis after every Exit: %d (%v), want 0", n, err)
	}
}

// multiRuleAtomic: rules of one level are decided together; a refusal by
// one counts the call at none.
func multiRuleAtomic(t *testing.T, b backend) {
	res := uniq("multi")
	fw := crule("fw", res, flow.AlgoFixedWindow, 5, time.Hour)
	log := crule("log", res, flow.AlgoSlidingLog, 3, time.Hour)
	tb := crule("tb", res, flow.AlgoTokenBucket, 4, time.Hour)
	es, _, rdb := engines(t, b, 2, fw, log, tb)
	var refusedBy []string
	passed := 0
	for i := range 10 {
		_, err := es[i%2].Entry(res)
		var be *flow.BlockError
		switch {
		case err == nil:
			passed++
		case errors.As(err, &be):
			refusedBy = append(refusedBy, be.RuleID)
			if be.Reason != flow.ReasonClusterLimited || be.RetryAfter <= 0 {
				t.Fatalf("block: %+v, want reason %q and a retry-after", be, flow.ReasonClusterLimited)
			}
		default:
			t.Fatal(err)
		}
	}
	if passed != 3 || len(refusedBy) != 7 || refusedBy[0] != "log" {
		t.Fatalf("passed %d, refused by %v: want 3 passed and 7 refused by log", passed, refusedBy)
	}
	ctx := context.Background()
	tag := "flowgate:{" + res + "|global|}:"
	if c, err := rdb.HGet(ctx, tag+"fw", "c").Int(); err != nil || c != 3 {
		t.Fatalf("fixed window counted %d (%v), want 3: refused calls must not count", c, err)
	}
	// The bucket's state is the moment it was last empty: one permit's
	// interval (900s at 4/h) before now.
	e, err := rdb.Get(ctx, tag+"tb").Float64()
	stored := (float64(redisNow(t, rdb).UnixMicro()) - e) / 900e6
	if err != nil || math.Abs(stored-1) > 1e-3 {
		t.Fatalf("token bucket stores %v (%v), want 4-3 = 1", stored, err)
	}
	if n, err := rdb.ZCard(ctx, tag+"log").Result(); err != nil || n != 3 {
		t.Fatalf("sliding log holds %d (%v), want 3", n, err)
	}
}

// keyedLevels: user and ip rules keep one cluster-wide count per key.
func keyedLevels(t *testing.T, b backend) {
	res := uniq("keyed")
	u := crule("u", res, flow.AlgoFixedWindow, 2, time.Hour)
	u.Level = flow.LevelUser
	ip := crule("ip", res, flow.AlgoSlidingLog, 3, time.Hour)
	ip.Level = flow.LevelIP
	es, _, _ := engines(t, b, 2, u, ip)
	try := func(i int, opts ...flow.EntryOption) string {
		p, err := es[i%2].Entry(res, opts...)
		if err != nil {
			var be *flow.BlockError
			if !errors.As(err, &be) {
				t.Fatal(err)
			}
			return be.RuleID
		}
		p.Exit()
		return "pass"
	}
	var got []string
	for i := range 3 {
		got = append(got, try(i, flow.WithUser("alice"), flow.WithIP("10.0.0.1")))
	}
	got = append(got, try(0, flow.WithUser("bob"), flow.WithIP("10.0.0.1")))
	got = append(got, try(1, flow.WithUser("bob"), flow.WithIP("10.0.0.2")))
	got = append(got, try(0, flow.WithUser("bob"), flow.WithIP("10.0.0.2")))
	want := []string{"pass", "pass", "u", "pass", "pass", "u"}
	// alice's third call is refused by the user rule after the ip rule
	// counted it, and the ip permit is given back: 10.0.0.1 has room for bob.
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
