package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// TestEveryKeyExpires: every key a decision writes has an expiry, set in
// the same script, derived from the algorithm's state (never longer than
// the state matters), and a fixed window's is not pushed back by hits.
func TestEveryKeyExpires(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	ts := newServer(t, srv.NewClient(nil))
	const window = 10 * time.Second
	tests := []struct {
		algo flow.Algorithm
		most time.Duration // the longest the state of one call can matter
	}{
		{flow.AlgoTokenBucket, time.Second},                 // refill of the one permit taken
		{flow.AlgoWarmUp, window},                           // back to cold
		{flow.AlgoLeakyBucket, window + time.Second},        // slot + a window
		{flow.AlgoFixedWindow, window},                      // the window's end
		{flow.AlgoSlidingWindow, window + window/10},        // the newest sub-window sliding out
		{flow.AlgoSlidingLog, window},                       // the newest entry leaving
		{flow.AlgoConcurrency, ts.cf.concTTL + time.Second}, // the lease TTL
	}
	for _, tt := range tests {
		t.Run(tt.algo.String(), func(t *testing.T) {
			r := crule("r", uniq(tt.algo.String()), tt.algo, 10, window)
			if tt.algo == flow.AlgoWarmUp {
				r.Warmup = time.Second
			}
			e := newEngine(t, ts, t0, r)
			p, err := e.Entry(r.Resource)
			if err != nil {
				t.Fatal(err)
			}
			key := "flowgate:{" + r.Resource + "|global|}:r"
			ttl, err := rdb.PTTL(ctx, key).Result()
			if err != nil || ttl <= 0 || ttl > tt.most {
				t.Fatalf("PTTL %v (%v), want in (0, %v]", ttl, err, tt.most)
			}
			p.Exit()
		})
	}
	t.Run("fixed window is not an idle timeout", func(t *testing.T) {
		r := crule("r", uniq("fw-idle"), flow.AlgoFixedWindow, 10, window)
		e := newEngine(t, ts, t0, r)
		key := "flowgate:{" + r.Resource + "|global|}:r"
		waitWindowStart(t, rdb, window, time.Second)
		if _, err := e.Entry(r.Resource); err != nil {
			t.Fatal(err)
		}
		first := rdb.PTTL(ctx, key).Val()
		time.Sleep(60 * time.Millisecond) // Redis's clock moves on
		if _, err := e.Entry(r.Resource); err != nil {
			t.Fatal(err)
		}
		if second := rdb.PTTL(ctx, key).Val(); second > first-50*time.Millisecond {
			t.Fatalf("PTTL %v then %v: a hit pushed the window's end back", first, second)
		}
	})
	if ttl := rdb.PTTL(ctx, "flowgate:{instances}").Val(); ttl <= 0 || ttl > ts.cf.beatTTL {
		t.Fatalf("heartbeat set PTTL %v, want in (0, %v]", ttl, ts.cf.beatTTL)
	}
}
