package cluster

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

// Settling through Redis (flow.WithActualCost on cluster rules): each test
// runs on one redis-server and on a 3-master Redis Cluster. Limits are 10
// an hour (a bucket earns one permit in 6 minutes), so nothing refills
// while a test runs and every count is exact.

const (
	settleLimit  = 10
	settleWindow = time.Hour
	settleStable = settleWindow / settleLimit // a bucket's interval
)

func TestSettleSingleRedis(t *testing.T) {
	srv := redistest.Start(t)
	runSettle(t, backend{"single", func(t *testing.T) redis.UniversalClient { return srv.NewClient(nil) }})
}

func TestSettleRedisCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	runSettle(t, backend{"cluster", func(t *testing.T) redis.UniversalClient { return c.NewClient(nil) }})
}

func runSettle(t *testing.T, b backend) {
	for _, algo := range settleAlgos {
		t.Run(algo.String(), func(t *testing.T) { settleAlgo(t, b, algo) })
	}
	t.Run("leaky_bucket refund", func(t *testing.T) { settleLeakyRefund(t, b) })
	t.Run("concurrency released", func(t *testing.T) { settleConcurrency(t, b) })
}

var settleAlgos = []flow.Algorithm{flow.AlgoTokenBucket, flow.AlgoWarmUp, flow.AlgoLeakyBucket, flow.AlgoFixedWindow, flow.AlgoSlidingWindow, flow.AlgoSlidingLog}

// counts reports whether algo's room shows as a count of admissions (the
// others admit one call and show it as the time to the next).
func counts(algo flow.Algorithm) bool {
	return algo != flow.AlgoWarmUp && algo != flow.AlgoLeakyBucket
}

// room is what engine B finds after engine A's one call: the calls of one
// permit it admits before its first refusal, and that refusal's RetryAfter.
type room struct {
	admitted int
	retry    time.Duration
}

// settleScenario runs A's call (reserving reserve, settling at actual, or
// not settling when actual < 0) on a fresh resource, then probes with B.
func settleScenario(t *testing.T, b backend, algo flow.Algorithm, reserve, actual int, maxDebt float64) (room, Stats) {
	t.Helper()
	res := uniq("settle-" + algo.String())
	r := crule("r", res, algo, settleLimit, settleWindow)
	r.MaxDebt = maxDebt
	if algo == flow.AlgoWarmUp {
		r.Warmup = settleWindow
	}
	es, ts, rdb := engines(t, b, 2, r)
	waitWindowStart(t, rdb, settleWindow, 30*time.Second)
	p, err := es[0].Entry(res, flow.WithTokens(reserve))
	if err != nil {
		t.Fatalf("A's call: %v", err)
	}
	if actual >= 0 {
		p.Exit(flow.WithActualCost(actual))
	} else {
		p.Exit()
	}
	var got room
	for range 3 * settleLimit {
		q, err := es[1].Entry(res)
		var be *flow.BlockError
		if errors.As(err, &be) {
			if be.Reason != flow.ReasonClusterLimited {
				t.Fatalf("B refused by %v, want the cluster limit", be.Reason)
			}
			got.retry = be.RetryAfter
			return got, ts[0].Stats()
		}
		if err != nil {
			t.Fatal(err)
		}
		q.Exit()
		got.admitted++
	}
	t.Fatalf("B admitted %d calls at a limit of %d", got.admitted, settleLimit)
	return got, Stats{}
}

// settleAlgo: a charge is paid by the other engine's calls, a refund gives
// it room back, and maxDebt bounds a charge however large.
func settleAlgo(t *testing.T, b backend, algo flow.Algorithm) {
	base, _ := settleScenario(t, b, algo, 1, -1, 20)
	charged, st := settleScenario(t, b, algo, 1, 6, 20)
	if st.Settled != 1 || st.SettleCharged != 5 || st.SettleForgiven != 0 {
		t.Fatalf("charge of 5: stats %+v, want 1 settled, 5 charged, 0 forgiven", st)
	}
	big, _ := settleScenario(t, b, algo, 6, -1, 20)
	refunded, st := settleScenario(t, b, algo, 6, 1, 20)
	// (An idle leaky bucket's call holds no spacing to give back: the next
	// call pays it. settleLeakyRefund refunds a queue.)
	if st.SettleRefunded == 0 && algo != flow.AlgoLeakyBucket {
		t.Fatalf("refund of 5: stats %+v, nothing given back", st)
	}
	capped, st := settleScenario(t, b, algo, 1, 1000, 5)
	if st.SettleCharged+st.SettleForgiven != 999 {
		t.Fatalf("charge of 999: charged %d + forgiven %d, want 999", st.SettleCharged, st.SettleForgiven)
	}
	t.Logf("base %+v charged %+v; reserve 6 %+v refunded %+v; capped %+v (charged %d)", base, charged, big, refunded, capped, st.SettleCharged)
	if counts(algo) {
		if charged.admitted != base.admitted-5 {
			t.Fatalf("after a charge of 5, B admitted %d, want %d", charged.admitted, base.admitted-5)
		}
		if refunded.admitted != big.admitted+5 {
			t.Fatalf("after a refund of 5, B admitted %d, want %d", refunded.admitted, big.admitted+5)
		}
		// The charge may take what is left and maxDebt beyond it: the
		// window holds limit + maxDebt (a bucket: burst + maxDebt).
		if capped.admitted != 0 || st.SettleCharged+1 > settleLimit+5 {
			t.Fatalf("capped charge: B admitted %d, charged %d; want 0 and at most %d", capped.admitted, st.SettleCharged, settleLimit+5-1)
		}
		return
	}
	// Warm-up and leaky bucket admit one call: the charge shows as time.
	// Redis's clock moves a little between the scenarios: half an
	// interval of slack.
	slack := settleStable / 2
	if d := charged.retry - base.retry; d < 5*settleStable-slack {
		t.Fatalf("a charge of 5 moved B's retry by %v, want about %v", d, 5*settleStable)
	}
	if algo == flow.AlgoWarmUp {
		if d := big.retry - refunded.retry; d < 4*settleStable {
			t.Fatalf("a refund of 5 moved B's retry back by %v, want at least %v", d, 4*settleStable)
		}
	}
	if capped.retry > 6*settleStable+slack || st.SettleCharged > 5 {
		t.Fatalf("capped charge: B's retry %v, charged %d; want at most %v (maxDebt 5, then one interval) and 5",
			capped.retry, st.SettleCharged, 6*settleStable)
	}
}

// settleLeakyRefund: a leaky bucket's refund pulls a queue's end earlier.
// An idle bucket's call holds no spacing (the next call pays it), so the
// queue is made by a charge first, at the token server directly.
func settleLeakyRefund(t *testing.T, b backend) {
	ctx := context.Background()
	r := crule("r", uniq("settle-leaky-refund"), flow.AlgoLeakyBucket, settleLimit, settleWindow)
	r = r.WithDefaults()
	ts := newServer(t, b.client(t))
	req := flow.TokenRequest{Resource: r.Resource, Level: flow.LevelGlobal, Tokens: 1, Rules: []*flow.Rule{&r}, Factor: 1}
	probe := func() time.Duration {
		t.Helper()
		got, err := ts.Acquire(ctx, req)
		if err != nil || got.Allowed {
			t.Fatalf("probe: %+v, %v; want a refusal", got, err)
		}
		return got.RetryAfter
	}
	res, err := ts.Acquire(ctx, req)
	if err != nil || !res.Allowed {
		t.Fatalf("first call: %+v, %v", res, err)
	}
	settle := func(reserved, actual int) {
		t.Helper()
		s := req
		s.Tokens, s.Settle, s.Actual = reserved, true, actual
		if err := ts.Release(ctx, s, res); err != nil {
			t.Fatal(err)
		}
	}
	settle(1, 11) // 10 more: the queue ends 10 intervals from now
	queued := probe()
	settle(6, 1) // 5 fewer
	if d := queued - probe(); d < 5*settleStable-settleStable/2 || d > 5*settleStable+settleStable/2 {
		t.Fatalf("a refund of 5 moved the retry back by %v, want about %v", d, 5*settleStable)
	}
	settle(100, 0) // more than is queued: the end comes back to now, no earlier
	if got := probe(); got > settleStable+settleStable/10 {
		t.Fatalf("after refunding more than was queued, retry %v, want at most one interval", got)
	}
}

// settleConcurrency: a rule set with a concurrency rule releases its
// permits in the settling call, and its rate rule is settled in it.
func settleConcurrency(t *testing.T, b backend) {
	res := uniq("settle-conc")
	conc := crule("c", res, flow.AlgoConcurrency, 1, time.Second)
	fw := crule("f", res, flow.AlgoFixedWindow, settleLimit, settleWindow)
	es, ts, rdb := engines(t, b, 2, conc, fw)
	waitWindowStart(t, rdb, settleWindow, 30*time.Second)
	p, err := es[0].Entry(res)
	if err != nil {
		t.Fatal(err)
	}
	p.Exit(flow.WithActualCost(4))
	admitted := 0
	for range 2 * settleLimit {
		q, err := es[1].Entry(res)
		if err != nil {
			break
		}
		q.Exit()
		admitted++
	}
	if admitted != settleLimit-4 {
		t.Fatalf("B admitted %d, want %d: the permit released and 3 charged", admitted, settleLimit-4)
	}
	if n := ts[0].heldCount(); n != 0 {
		t.Fatalf("%d concurrency leases still renewed after Exit", n)
	}
}

// TestSettleAgainstLease: a leased rule set settles against its lease
// first: a refund goes back into the batch the call came from (no round
// trip; the next call spends it locally), a charge the lease cannot cover
// goes to Redis, and once the lease is returned Redis holds exactly the
// calls' actual costs.
func TestSettleAgainstLease(t *testing.T) {
	srv := redistest.Start(t)
	res := uniq("settle-lease")
	r := crule("r", res, flow.AlgoFixedWindow, 1000, settleWindow)
	ts := newServer(t, srv.NewClient(nil), WithLeasing(LeaseConfig{Period: time.Minute, MaxBatch: 8}))
	e := newEngine(t, ts, t0, r)
	rdb := srv.NewClient(nil)
	waitWindowStart(t, rdb, settleWindow, 30*time.Second)
	trips := func() uint64 {
		var n uint64
		for _, c := range ts.Stats().Latency.Counts {
			n += c
		}
		return n
	}
	enter := func(tokens int) flow.Permit {
		t.Helper()
		p, err := e.Entry(res, flow.WithTokens(tokens))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	enter(5).Exit(flow.WithActualCost(1)) // a batch of 5, 4 back into it
	before := trips()
	if st := ts.Stats(); st.SettleRefunded != 4 || st.LeaseFetches != 1 {
		t.Fatalf("after the refund: %+v, want 4 given back and 1 batch", st)
	}
	enter(4).Exit() // from the refund, locally
	if st := ts.Stats(); st.LeaseFetches != 1 || trips() != before {
		t.Fatalf("the refunded permits were not spent locally: %+v", st)
	}
	enter(1).Exit(flow.WithActualCost(3)) // a new batch; what it cannot cover goes to Redis
	if st := ts.Stats(); st.SettleCharged != 2 {
		t.Fatalf("after a charge of 2: %+v", st)
	}
	ts.Close() // returns the unspent permits
	req := flow.TokenRequest{Resource: res, Level: flow.LevelGlobal, Tokens: 1, Rules: []*flow.Rule{&r}, Factor: 1}
	p, err := newPlan(defaults().prefix, &req, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rdb.HGet(context.Background(), p.keys("")[0], "c").Int()
	if err != nil || got != 1+4+3 {
		t.Fatalf("Redis counts %d (%v), want the actual costs 1+4+3", got, err)
	}
}

// TestSettleConcurrent: two engines, four goroutines each, every call
// reserving 5 and settling at 1 to 25, against one rule of 1000 an hour
// with maxDebt 200, on one redis-server and on a Redis Cluster; run under
// -race. What Redis charged (the admitted calls' reservations, plus
// charges, less refunds, from the servers' counts) stays within limit +
// maxDebt, plus what a bucket earns over the run; for fixed_window it is
// exactly what Redis's window holds.
func TestSettleConcurrent(t *testing.T) {
	srv := redistest.Start(t)
	c := redistest.StartCluster(t)
	for _, b := range []backend{
		{"single", func(t *testing.T) redis.UniversalClient { return srv.NewClient(nil) }},
		{"cluster", func(t *testing.T) redis.UniversalClient { return c.NewClient(nil) }},
	} {
		for _, algo := range settleAlgos {
			t.Run(b.name+"/"+algo.String(), func(t *testing.T) { settleConcurrent(t, b, algo) })
		}
	}
}

func settleConcurrent(t *testing.T, b backend, algo flow.Algorithm) {
	const limit, maxDebt, window = 1000, 200, time.Hour
	res := uniq("settle-race")
	r := crule("r", res, algo, limit, window)
	r.MaxDebt = maxDebt
	if algo == flow.AlgoWarmUp {
		r.Warmup = window
	}
	es, ts, rdb := engines(t, b, 2, r)
	waitWindowStart(t, rdb, window, time.Minute)
	start := redisNow(t, rdb)
	var reserved atomic.Int64
	var wg sync.WaitGroup
	for i, e := range es {
		for g := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(i), uint64(g)))
				for range 40 {
					p, err := e.Entry(res, flow.WithTokens(5))
					if err != nil {
						continue
					}
					reserved.Add(5)
					p.Exit(flow.WithActualCost(1 + rng.IntN(25)))
				}
			})
		}
	}
	wg.Wait()
	elapsed := redisNow(t, rdb).Sub(start)
	charged := float64(reserved.Load())
	for _, s := range ts {
		st := s.Stats()
		charged += float64(st.SettleCharged) - float64(st.SettleRefunded)
	}
	bound := float64(limit+maxDebt) + limit*elapsed.Seconds()/window.Seconds() + 1
	t.Logf("%s: reserved %d, charged %v in %v (bound %.0f)", algo, reserved.Load(), charged, elapsed, bound)
	if charged > bound {
		t.Fatalf("charged %v, want <= %.0f", charged, bound)
	}
	if algo != flow.AlgoFixedWindow {
		return
	}
	req := flow.TokenRequest{Resource: res, Level: flow.LevelGlobal, Tokens: 1, Rules: []*flow.Rule{&r}, Factor: 1}
	p, err := newPlan(defaults().prefix, &req, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.HGet(context.Background(), p.keys("")[0], "c").Int(); err != nil || float64(got) != charged {
		t.Fatalf("Redis's window holds %d (%v), the servers' counts say %v", got, err, charged)
	}
}

// TestSettleEarlierBatchInRedis: a call served from an earlier lease batch
// settles in Redis, not against the batch now held (a window's permits
// belong to the window they were counted in); a call of the batch held
// settles against it. Once the lease is returned Redis holds the calls'
// actual costs: nothing.
func TestSettleEarlierBatchInRedis(t *testing.T) {
	srv := redistest.Start(t)
	res := uniq("settle-batches")
	r := crule("r", res, flow.AlgoFixedWindow, 1000, settleWindow)
	ts := newServer(t, srv.NewClient(nil), WithLeasing(LeaseConfig{Period: time.Minute, MaxBatch: 8}))
	e := newEngine(t, ts, t0, r)
	rdb := srv.NewClient(nil)
	waitWindowStart(t, rdb, settleWindow, 30*time.Second)
	req := flow.TokenRequest{Resource: res, Level: flow.LevelGlobal, Tokens: 1, Rules: []*flow.Rule{&r}, Factor: 1}
	p, err := newPlan(defaults().prefix, &req, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		n, err := rdb.HGet(context.Background(), p.keys("")[0], "c").Int()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	p1, err := e.Entry(res) // batch 1: one permit
	if err != nil {
		t.Fatal(err)
	}
	p2, err := e.Entry(res) // batch 2: two permits, one left
	if err != nil {
		t.Fatal(err)
	}
	if st := ts.Stats(); st.LeaseFetches != 2 || count() != 3 {
		t.Fatalf("%+v, Redis count %d: want 2 batches counting 3", st, count())
	}
	p1.Exit(flow.WithActualCost(0))
	if count() != 2 {
		t.Fatalf("batch 1's call refunded: Redis count %d, want 2", count())
	}
	p2.Exit(flow.WithActualCost(0))
	if count() != 2 {
		t.Fatalf("batch 2's call refunded into its batch: Redis count %d, want 2 until the batch returns", count())
	}
	ts.Close()
	if count() != 0 {
		t.Fatalf("after the lease returned, Redis count %d, want 0", count())
	}
}
