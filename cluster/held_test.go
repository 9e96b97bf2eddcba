package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// heldCount is how many leases s renews.
func (s *RedisTokenServer) heldCount() int {
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	return len(s.held.m)
}

// TestHeldLeasesReleasedElsewhere: replicas share Redis, and a remote
// client's Exit may reach another replica than its Acquire. The acquiring
// replica forgets such leases at its next renewal, instead of keeping (and
// renewing) them for ever, and keeps renewing the ones still held.
func TestHeldLeasesReleasedElsewhere(t *testing.T) {
	srv := redistest.Start(t)
	// Heartbeats off: the test drives renewals itself.
	a := newServer(t, srv.NewClient(nil), WithHeartbeat(0, 0))
	b := newServer(t, srv.NewClient(nil), WithHeartbeat(0, 0))
	r := crule("cc", uniq("held"), flow.AlgoConcurrency, 100, time.Second)
	req := flow.TokenRequest{Resource: r.Resource, Tokens: 2, Rules: []*flow.Rule{&r}, Factor: 1}
	ctx := context.Background()
	var results []flow.TokenResult
	for range 50 {
		res, err := a.Acquire(ctx, req)
		if err != nil || !res.Allowed || res.Lease == "" {
			t.Fatalf("acquire: %+v, %v", res, err)
		}
		results = append(results, res)
	}
	// 49 go back through the other replica (Exit, and one refund), one stays.
	for i, res := range results[1:] {
		rq := req
		rq.Refund = i == 0
		if err := b.Release(ctx, rq, res); err != nil {
			t.Fatal(err)
		}
	}
	key := "flowgate:{" + r.Resource + "|global|}:cc"
	rdb := srv.Client()
	if n, err := rdb.ZCard(ctx, key).Result(); err != nil || n != 2 {
		t.Fatalf("permits in Redis: %d (%v), want the 2 of the one lease still held", n, err)
	}
	if n := a.heldCount(); n != 50 {
		t.Fatalf("before a renewal: %d leases held, want 50 (a cannot know yet)", n)
	}
	before, err := rdb.ZScore(ctx, key, results[0].Lease+":1").Result()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // Redis's clock moves on, so a renewal shows in the score
	if err := a.renew(ctx); err != nil {
		t.Fatal(err)
	}
	if n := a.heldCount(); n != 1 {
		t.Fatalf("after a renewal: %d leases held, want 1 (the 49 released elsewhere forgotten)", n)
	}
	after, err := rdb.ZScore(ctx, key, results[0].Lease+":1").Result()
	if err != nil || after <= before {
		t.Fatalf("the lease still held: score %v -> %v (%v), want renewed", before, after, err)
	}
	if n, err := rdb.ZCard(ctx, key).Result(); err != nil || n != 2 {
		t.Fatalf("permits in Redis after the renewal: %d (%v), want 2: nothing brought back", n, err)
	}
	// Its own release empties both.
	if err := a.Release(ctx, req, results[0]); err != nil {
		t.Fatal(err)
	}
	if n, c := a.heldCount(), rdb.ZCard(ctx, key).Val(); n != 0 || c != 0 {
		t.Fatalf("after the last release: %d held, %d in Redis; want 0 and 0", n, c)
	}
}
