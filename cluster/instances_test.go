package cluster

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

// TestClockSkewSharesOneLimit: engines whose clocks disagree by an hour and
// by seconds still share one exact limit: the window is on Redis's clock.
func TestClockSkewSharesOneLimit(t *testing.T) {
	srv := redistest.Start(t)
	res := uniq("skew")
	r := crule("r", res, flow.AlgoFixedWindow, 100, time.Hour)
	var es []*flow.Engine
	for _, skew := range []time.Duration{-time.Hour, 0, 7 * time.Second, 42 * time.Second} {
		es = append(es, newEngine(t, newServer(t, srv.NewClient(nil)), t0.Add(skew), r))
	}
	waitWindowStart(t, srv.Client(), time.Hour, time.Second)
	passed, _ := hammer(t, es[:2], 4, res, 20, nil)
	passed2, _ := hammer(t, es[2:], 4, res, 20, nil)
	if passed+passed2 != 100 {
		t.Fatalf("passed %d+%d, want exactly 100 across skewed engines", passed, passed2)
	}
}

// TestPerInstanceThreshold: a per_instance limit is Limit x the live
// instances, counted by heartbeats; an instance that closes leaves.
func TestPerInstanceThreshold(t *testing.T) {
	srv := redistest.Start(t)
	res := uniq("per-instance")
	r := crule("r", res, flow.AlgoSlidingLog, 10, time.Hour)
	r.Cluster.Threshold = "per_instance"
	var ts []*RedisTokenServer
	var es []*flow.Engine
	for range 3 {
		s := newServer(t, srv.NewClient(nil), WithHeartbeat(0, time.Minute))
		ts = append(ts, s)
		es = append(es, newEngine(t, s, t0, r))
	}
	ctx := context.Background()
	for _, s := range ts {
		if _, err := s.Heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range ts {
		if s.Instances() != 3 {
			t.Fatalf("server %d sees %d instances, want 3", i, s.Instances())
		}
	}
	passed, _ := hammer(t, es, 4, res, 20, nil)
	if passed != 30 {
		t.Fatalf("passed %d, want 10 x 3 instances = 30", passed)
	}
	if err := ts[2].Close(); err != nil {
		t.Fatal(err)
	}
	// The threshold follows the count Redis reads at once; the local
	// fallback's divisor keeps 3 for a TTL (see TestInstanceTrust).
	if n, err := ts[0].Heartbeat(ctx); err != nil || n != 2 || ts[0].liveInstances() != 2 || ts[0].Instances() != 3 {
		t.Fatalf("after one instance closed: %d (%v), live %d, Instances %d, want 2, 2 and 3", n, err, ts[0].liveInstances(), ts[0].Instances())
	}
	// Now 10 x 2 = 20 < 30 already counted: refused.
	if _, err := es[0].Entry(res); !errors.Is(err, flow.ErrBlocked) {
		t.Fatalf("got %v, want blocked at 20", err)
	}
}

// TestHeartbeatExpires: an instance that stops beating (a crash) drops out
// of the count after its TTL, measured on Redis's clock.
func TestHeartbeatExpires(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	a := newServer(t, srv.NewClient(nil), WithHeartbeat(0, time.Minute))
	b := newServer(t, srv.NewClient(nil), WithHeartbeat(0, 100*time.Millisecond))
	if _, err := b.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := a.Heartbeat(ctx); n != 2 {
		t.Fatalf("instances %d, want 2", n)
	}
	time.Sleep(150 * time.Millisecond) // b's heartbeat runs out on Redis's clock
	if n, _ := a.Heartbeat(ctx); n != 1 {
		t.Fatalf("instances %d after b's TTL, want 1", n)
	}
}

// TestConcurrencyPermitsOfACrashedInstanceExpire: permits are leases; a
// live holder renews them, a dead one's run out after the TTL.
func TestConcurrencyPermitsOfACrashedInstanceExpire(t *testing.T) {
	srv := redistest.Start(t)
	r := crule("r", uniq("conc-ttl"), flow.AlgoConcurrency, 2, time.Second)
	// Live renews every ttl/3: its loop may stall for two thirds of the TTL
	// on loaded cores before its permit is at risk.
	const ttl = 600 * time.Millisecond
	live := newServer(t, srv.NewClient(nil), WithConcurrencyTTL(ttl), WithHeartbeat(0, 0))
	crashed := newServer(t, srv.NewClient(nil), WithConcurrencyTTL(ttl), WithHeartbeat(0, 0))
	other := newServer(t, srv.NewClient(nil), WithConcurrencyTTL(ttl), WithHeartbeat(0, 0))
	el, ec, eo := newEngine(t, live, t0, r), newEngine(t, crashed, t0, r), newEngine(t, other, t0, r)
	held, err := el.Entry(r.Resource)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ec.Entry(r.Resource); err != nil { // never exits: it crashes
		t.Fatal(err)
	}
	if err := crashed.Close(); err != nil { // stops renewing, as a crash would
		t.Fatal(err)
	}
	if _, err := eo.Entry(r.Resource); !errors.Is(err, flow.ErrBlocked) {
		t.Fatalf("third permit of 2: %v, want blocked", err)
	}
	// Redis's clock runs past the crashed instance's TTL: its permit drops
	// out, the live one's stays (renewed).
	key := "flowgate:{" + r.Resource + "|global|}:r"
	rdb := srv.Client()
	for deadline := time.Now().Add(20 * ttl); ; {
		live := "(" + strconv.FormatInt(redisNow(t, rdb).UnixMicro(), 10)
		if n := rdb.ZCount(context.Background(), key, live, "+inf").Val(); n <= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(ttl / 10) // waiting for Redis's clock, not for our logic
	}
	time.Sleep(ttl) // and a whole TTL more: live must have renewed meanwhile
	p, err := eo.Entry(r.Resource)
	if err != nil {
		t.Fatalf("after the crashed instance's TTL: %v, want its permit free", err)
	}
	p.Exit()
	if _, err := eo.Entry(r.Resource); err != nil {
		t.Fatalf("the freed permit again: %v", err)
	}
	// The live holder's permit survived four TTLs' worth of renewals? It
	// did if a second free permit is not there.
	if _, err := eo.Entry(r.Resource); !errors.Is(err, flow.ErrBlocked) {
		t.Fatalf("live holder's renewed permit was lost: %v", err)
	}
	held.Exit()
}

// TestInstanceTrust: which count the local fallback divides by, for the
// counts heartbeats read. A rise is believed at once; a drop once counts
// that low have been read for a whole TTL, and then the highest of them;
// a failed heartbeat (n 0 here) starts the TTL over.
func TestInstanceTrust(t *testing.T) {
	const ttl = 3 * time.Second
	type read struct {
		at   time.Duration // since t0
		n    int64         // 0: the heartbeat failed
		want int64
	}
	for _, tc := range []struct {
		name  string
		reads []read
	}{
		{"fleet grows", []read{{0, 1, 1}, {time.Second, 3, 3}, {2 * time.Second, 4, 4}}},
		{"a flush: the fleet re-joins one by one", []read{{0, 4, 4}, {time.Second, 1, 4}, {1100 * time.Millisecond, 2, 4}, {1200 * time.Millisecond, 4, 4}, {5 * time.Second, 4, 4}}},
		// The soak's case: one instance missed its beats while Redis was
		// paused; another, whose entry survived, reads 3 until it beats.
		{"an instance late after an outage", []read{{0, 4, 4}, {2 * time.Second, 3, 4}, {2500 * time.Millisecond, 4, 4}, {6 * time.Second, 3, 4}}},
		{"a crash is believed a TTL later", []read{{0, 4, 4}, {time.Second, 3, 4}, {2 * time.Second, 3, 4}, {4 * time.Second, 3, 3}}},
		{"the highest count of the low spell", []read{{0, 4, 4}, {time.Second, 2, 4}, {2 * time.Second, 3, 4}, {4 * time.Second, 2, 3}, {5 * time.Second, 2, 3}, {7 * time.Second, 2, 3}, {8 * time.Second, 2, 2}}},
		{"low before and after an outage is not one spell", []read{{0, 4, 4}, {time.Second, 3, 4}, {2 * time.Second, 0, 4}, {4 * time.Second, 3, 4}, {6 * time.Second, 3, 4}, {7 * time.Second, 3, 3}}},
		{"a clock that steps back", []read{{0, 4, 4}, {time.Second, 2, 4}, {-time.Hour, 2, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr instanceTrust
			for i, r := range tc.reads {
				if r.n == 0 {
					tr.failed()
					continue
				}
				if got := tr.observe(r.n, t0.Add(r.at), ttl); got != r.want {
					t.Fatalf("read %d (%d at %v): trusted %d, want %d", i, r.n, r.at, got, r.want)
				}
			}
		})
	}
}

// TestDueToleratesLateTicks: a ticker's late tick followed by a punctual
// one must not skip a run (it did: heartbeats every 2s against a 3s TTL).
func TestDueToleratesLateTicks(t *testing.T) {
	for _, tc := range []struct {
		since, period, tick time.Duration
		want                bool
	}{
		{time.Second - 5*time.Millisecond, time.Second, time.Second, true}, // the previous tick was 5ms late
		{time.Second, time.Second, time.Second, true},
		{10 * time.Millisecond, time.Second, time.Second, false},
		{900 * time.Millisecond, time.Second, 100 * time.Millisecond, false}, // one tick early
		{998 * time.Millisecond, time.Second, 100 * time.Millisecond, true},
		{10 * time.Second, 10 * time.Second, time.Second, true},
	} {
		if got := due(t0.Add(tc.since), t0, tc.period, tc.tick); got != tc.want {
			t.Errorf("due %v after the last run, period %v, tick %v: %v, want %v", tc.since, tc.period, tc.tick, got, tc.want)
		}
	}
}

// TestLateInstanceDoesNotEnlargeShares reproduces the chaos soak's
// over-admitting second with real Redis: one instance of four missed its
// beats (its entry ran out while Redis was paused), another beats and
// reads 3, and then Redis dies. The local fallback of every engine must
// still take a quarter of the limit: the fleet admits one limit in the
// window, not 33 + 3 x 25 = 108.
func TestLateInstanceDoesNotEnlargeShares(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	clk := clock.NewFake(t0)
	prefix := uniq("late") + ":"
	r := crule("r", uniq("late"), flow.AlgoFixedWindow, 100, time.Second)
	r.Cluster.Fallback = "local"
	var ts []*RedisTokenServer
	var es []*flow.Engine
	for i := range 4 {
		s := newServer(t, redis.NewClient(&redis.Options{Addr: srv.Addr}), WithClock(clk), WithHeartbeat(0, time.Minute),
			WithPrefix(prefix), WithInstanceID(strconv.Itoa(i)))
		ts = append(ts, s)
		es = append(es, newEngine(t, s, t0, r))
	}
	for _, s := range ts {
		if _, err := s.Heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Instance 3's entry runs out (as its TTL would with its beats failing).
	if err := srv.NewClient(nil).ZRem(ctx, prefix+"{instances}", "3").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := ts[0].Heartbeat(ctx); err != nil || n != 3 {
		t.Fatalf("Redis counts %d (%v), want 3", n, err)
	}
	if got := ts[0].Instances(); got != 4 {
		t.Errorf("instance 0 trusts %d instances a moment after instance 3 went missing, want 4", got)
	}
	srv.Kill()
	var total int
	for i, e := range es {
		admitted := 0
		for range 60 {
			p, err := e.Entry(r.Resource)
			if err == nil {
				admitted++
				p.Exit()
			} else if !errors.Is(err, flow.ErrBlocked) {
				t.Fatal(err)
			}
		}
		if admitted != 25 {
			t.Errorf("engine %d admitted %d locally, want its share 100/4 = 25", i, admitted)
		}
		total += admitted
	}
	if total != 100 {
		t.Errorf("the fleet admitted %d locally in one window, want the limit 100", total)
	}
	if fb := es[0].Snapshot().Cluster.Fallbacks["local"]; fb != 60 {
		t.Errorf("engine 0's local fallbacks %d, want all 60 calls", fb)
	}
}
