package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

const (
	leaseBatch  = 32
	leasePeriod = 50 * time.Millisecond
)

// leasedEngines returns 4 engines on leasing token servers.
func leasedEngines(t *testing.T, srv *redistest.Server, r flow.Rule) ([]*flow.Engine, []*RedisTokenServer) {
	t.Helper()
	var es []*flow.Engine
	var ts []*RedisTokenServer
	for i := range 4 {
		s := newServer(t, srv.NewClient(nil), WithLeasing(LeaseConfig{Period: leasePeriod, MaxBatch: leaseBatch}))
		ts = append(ts, s)
		es = append(es, newEngine(t, s, t0.Add(time.Duration(i)*time.Minute), r))
	}
	return es, ts
}

func roundTrips(ts []*RedisTokenServer) (trips, local uint64) {
	for _, s := range ts {
		st := s.Stats()
		trips += st.Passed + st.Blocked + st.Errors
		local += st.LeaseLocal
	}
	return trips, local
}

// TestLeasingOverAdmissionBound: with leases, a sliding log of 1000 per
// window admits at most 1000 in one window (Redis counts each leased
// permit when its batch is taken) and at least 1000 - instances x
// MaxBatch (what may be left unspent), in far fewer round trips than
// decisions; unspent permits go back on Close,
// after which Redis holds exactly what was admitted. The window is long so
// the run fits in one however loaded the cores (TestLeasingBoundOverTime
// has windows roll during its run).
func TestLeasingOverAdmissionBound(t *testing.T) {
	srv := redistest.Start(t)
	const window = time.Hour
	r := crule("r", uniq("lease-log"), flow.AlgoSlidingLog, 1000, window)
	es, ts := leasedEngines(t, srv, r)
	start := time.Now()
	passed, refused := hammer(t, es, 8, r.Resource, 100, nil)
	if el := time.Since(start); el > window/2 {
		t.Fatalf("run took %v: not inside one window", el)
	}
	if passed > 1000 || passed < 1000-4*leaseBatch {
		t.Fatalf("passed %d (refused %d), want 1000 - 4 x %d .. 1000", passed, refused, leaseBatch)
	}
	trips, local := roundTrips(ts)
	if decisions := uint64(passed + refused); trips*5 > decisions {
		t.Fatalf("%d round trips for %d decisions: leasing saved too little", trips, decisions)
	}
	t.Logf("passed %d refused %d: %d round trips, %d local decisions", passed, refused, trips, local)
	for _, s := range ts {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	n, err := srv.Client().ZCard(context.Background(), "flowgate:{"+r.Resource+"|global|}:r").Result()
	if err != nil || n != passed {
		t.Fatalf("log holds %d (%v) after Close returned unspent permits, want %d admitted", n, err, passed)
	}
}

// TestLeasingFixedWindowNeverOverAdmits: a fixed window's batch ends with
// its window, and every leased permit is counted in Redis, so the window
// never admits more than its limit.
func TestLeasingFixedWindowNeverOverAdmits(t *testing.T) {
	srv := redistest.Start(t)
	r := crule("r", uniq("lease-fw"), flow.AlgoFixedWindow, 1000, time.Hour)
	es, ts := leasedEngines(t, srv, r)
	waitWindowStart(t, srv.Client(), time.Hour, 2*time.Second)
	passed, _ := hammer(t, es, 8, r.Resource, 100, nil)
	if passed > 1000 || passed < 1000-4*leaseBatch {
		t.Fatalf("passed %d, want 1000 - 4 x %d .. 1000", passed, leaseBatch)
	}
	trips, local := roundTrips(ts)
	if local == 0 || trips*5 > uint64(len(es)*8*100) {
		t.Fatalf("%d round trips, %d local decisions for %d calls", trips, local, len(es)*8*100)
	}
}

// TestLeasingBatchFollowsDemand: the batch doubles while it runs out early,
// up to MaxBatch, and a batch that expires unspent goes back to Redis.
func TestLeasingBatchFollowsDemand(t *testing.T) {
	srv := redistest.Start(t)
	r := crule("r", uniq("lease-size"), flow.AlgoTokenBucket, 1e6, time.Second)
	ts := newServer(t, srv.NewClient(nil), WithLeasing(LeaseConfig{Period: time.Hour, MaxBatch: 16}), WithHeartbeat(0, 0))
	e := newEngine(t, ts, t0, r)
	for range 1 + 2 + 4 + 8 + 16 + 16 {
		p, err := e.Entry(r.Resource)
		if err != nil {
			t.Fatal(err)
		}
		p.Exit()
	}
	if st := ts.Stats(); st.LeaseFetches != 6 || st.LeaseLocal != 47-6 {
		t.Fatalf("stats %+v: want batches 1,2,4,8,16,16 = 6 fetches", st)
	}
	p, _ := e.Entry(r.Resource) // a 7th batch of 16, one spent
	p.Exit()
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if st := ts.Stats(); st.LeaseReturned != 15 {
		t.Fatalf("returned %d unspent permits on Close, want 15", st.LeaseReturned)
	}
}

// TestLeasingBoundOverTime: under sustained demand a sliding log of 100
// per 300ms, leased in batches of at most 16 by 4 instances, never admits
// more than 100 + 4 x 16 in any 300ms: only the batch each instance holds
// when a window starts can have been counted before it.
func TestLeasingBoundOverTime(t *testing.T) {
	srv := redistest.Start(t)
	const (
		limit  = 100
		window = 300 * time.Millisecond
		batch  = 16
	)
	r := crule("r", uniq("lease-time"), flow.AlgoSlidingLog, limit, window)
	var es []*flow.Engine
	for range 4 {
		s := newServer(t, srv.NewClient(nil), WithLeasing(LeaseConfig{Period: 50 * time.Millisecond, MaxBatch: batch}))
		es = append(es, newEngine(t, s, t0, r))
	}
	var mu sync.Mutex
	var admitted, answered []time.Time
	var wg sync.WaitGroup
	end := time.Now().Add(time.Second)
	for _, e := range es {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) {
					p, err := e.Entry(r.Resource)
					at := time.Now()
					mu.Lock()
					answered = append(answered, at)
					mu.Unlock()
					if err != nil {
						if !errors.Is(err, flow.ErrBlocked) {
							t.Error(err)
							return
						}
						continue
					}
					p.Exit()
					mu.Lock()
					admitted = append(admitted, at)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	sort.Slice(admitted, func(i, j int) bool { return admitted[i].Before(admitted[j]) })
	most, lo := 0, 0
	for hi := range admitted {
		for admitted[hi].Sub(admitted[lo]) >= window {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	// Sustained demand admits about limit per window over the time the
	// callers were being answered (stretches of 5ms and more without an
	// answer are the process starved of CPU, not the limiter; see
	// hammerFor).
	sort.Slice(answered, func(i, j int) bool { return answered[i].Before(answered[j]) })
	var busy time.Duration
	for i := 1; i < len(answered); i++ {
		busy += min(5*time.Millisecond, answered[i].Sub(answered[i-1]))
	}
	if n, least := len(admitted), int(0.9*limit*busy.Seconds()/window.Seconds()); n < least {
		t.Fatalf("admitted %d in 1s (answered for %v), want at least %d", n, busy, least)
	}
	if bound := limit + 4*batch; most > bound {
		t.Fatalf("%d admitted in one %v window, bound %d", most, window, bound)
	}
	t.Logf("admitted %d in 1s (answered for %v); most in one %v window %d (limit %d, bound %d)", len(admitted), busy, window, most, limit, limit+4*batch)
}

// TestLeasingFixedWindowReturnStaysInItsWindow: a batch of one window,
// returned after that window ended (on the next call or sweep), must not
// give the next window permits it never counted: the refund goes to the
// window the batch was taken in, and that one is over.
func TestLeasingFixedWindowReturnStaysInItsWindow(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	// The check needs its calls inside one Redis window; a slow machine may
	// miss that, so a try that could not be judged is run again (3 tries).
	var why string
	for range 3 {
		got, judged, reason := leaseReturnTry(t, srv, rdb)
		if judged {
			if got != 100 {
				t.Fatalf("the window after the lease's admitted %d, want its limit 100 (the old batch's return must not count in it)", got)
			}
			return
		}
		why = reason
		t.Logf("try not judged: %s", reason)
	}
	// Not judged is not passed: make test must not pass by not checking.
	t.Fatalf("none of 3 tries could be judged (last: %s)", why)
}

// leaseReturnTry leases a batch in one fixed window, then counts what the
// next window admits: a direct engine's calls around one call of the leased
// engine (which returns its old batch's 15 and asks for more). judged is
// false when Redis timed out or the calls spanned two windows.
func leaseReturnTry(t *testing.T, srv *redistest.Server, rdb *redis.Client) (got int, judged bool, why string) {
	t.Helper()
	const limit, window = 100, 2 * time.Second
	r := crule("r", uniq("lease-fw-return"), flow.AlgoFixedWindow, limit, window)
	leased := newEngine(t, newServer(t, srv.NewClient(nil), WithLeasing(LeaseConfig{Period: time.Hour, MaxBatch: 16}), WithHeartbeat(0, 0)), t0, r)
	direct := newEngine(t, newServer(t, srv.NewClient(nil), WithHeartbeat(0, 0)), t0, r)
	timedOut := false
	admit := func(e *flow.Engine, most int) int {
		n := 0
		for ; n < most; n++ {
			p, err := e.Entry(r.Resource)
			var be *flow.BlockError
			if errors.As(err, &be) && be.Reason == flow.ReasonClusterUnavailable {
				timedOut = true
			}
			if err != nil {
				break
			}
			p.Exit()
		}
		return n
	}
	waitWindowStart(t, rdb, window, window/2)
	// Batches of 1, 2, 4 and 8, then one of 16 with 15 left in the lease.
	if n := admit(leased, 16); n != 16 {
		if timedOut {
			return 0, false, "Redis did not answer in time"
		}
		t.Fatalf("leased engine admitted %d of 16 in a fresh window", n)
	}
	waitWindowStart(t, rdb, window, window) // into the next window
	start := redisNow(t, rdb)
	got = admit(direct, 2*limit)
	got += admit(leased, 1)
	got += admit(direct, 2*limit)
	if timedOut {
		return 0, false, "Redis did not answer in time"
	}
	if end := redisNow(t, rdb); end.UnixMicro()/window.Microseconds() != start.UnixMicro()/window.Microseconds() {
		return 0, false, fmt.Sprintf("the calls spanned two windows (%v)", end.Sub(start))
	}
	return got, true, ""
}
