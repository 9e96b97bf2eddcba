package cluster

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/redistest"
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
	if n, err := ts[0].Heartbeat(ctx); err != nil || n != 2 || ts[0].Instances() != 2 {
		t.Fatalf("after one instance closed: %d (%v), Instances %d, want 2", n, err, ts[0].Instances())
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
