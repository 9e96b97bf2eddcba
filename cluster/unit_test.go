package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

func TestDecodeReply(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want int
		ok   bool
		r    reply
	}{
		{"allowed", []any{int64(1), int64(-1), int64(7), int64(2500), int64(0)}, 5, true,
			reply{allowed: true, refused: -1, remaining: 7, wait: 2500 * time.Microsecond}},
		{"refused", []any{int64(0), int64(2), int64(0), int64(0), int64(1500000)}, 5, true,
			reply{refused: 2, retry: 1500 * time.Millisecond}},
		{"lease", []any{int64(1), int64(-1), int64(3), int64(0), int64(0), int64(16), int64(-1), int64(5)}, 8, true,
			reply{allowed: true, refused: -1, remaining: 3, granted: 16, reset: -time.Microsecond, at: 5}},
		{"not an array", int64(1), 5, false, reply{}},
		{"short", []any{int64(1)}, 5, false, reply{}},
		{"string element", []any{int64(1), "x", int64(0), int64(0), int64(0)}, 5, false, reply{}},
		{"boolean-ish", []any{int64(2), int64(-1), int64(0), int64(0), int64(0)}, 5, false, reply{}},
		{"allowed with refusal", []any{int64(1), int64(0), int64(0), int64(0), int64(0)}, 5, false, reply{}},
		{"negative wait", []any{int64(1), int64(-1), int64(0), int64(-5), int64(0)}, 5, false, reply{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := decodeReply(tt.v, tt.want)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if r != tt.r {
				t.Fatalf("got %+v, want %+v", r, tt.r)
			}
		})
	}
}

// TestKeysShareOneSlot: every key of one decision hashes to one Redis
// Cluster slot, whatever the resource, level and key contain.
func TestKeysShareOneSlot(t *testing.T) {
	rules := []*flow.Rule{
		{ID: "a", Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Second},
		{ID: "b", Algorithm: flow.AlgoSlidingLog, Limit: 1, Window: time.Second},
		{ID: "", Algorithm: flow.AlgoConcurrency, Limit: 1, Window: time.Second},
	}
	for _, c := range []struct{ res, key string }{{"GET /orders", "alice"}, {"a}b{", "x}y"}, {"", ""}, {"r", "{"}} {
		p, err := newPlan("app{1}:", &flow.TokenRequest{Resource: c.res, Level: flow.LevelUser, Key: c.key, Rules: rules, Factor: 1}, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		ks := p.keys(c.key)
		for _, k := range ks[1:] {
			if redistest.KeySlot(k) != redistest.KeySlot(ks[0]) {
				t.Fatalf("keys %q hash to different slots", ks)
			}
		}
		if !strings.HasPrefix(ks[0], "app{1}:") || !strings.HasSuffix(ks[2], ":#2") {
			t.Fatalf("keys %q: want the prefix and a positional id for the rule without one", ks)
		}
	}
}

func TestPlanParams(t *testing.T) {
	tb := &flow.Rule{ID: "tb", Algorithm: flow.AlgoTokenBucket, Limit: 10, Window: 2 * time.Second, Burst: 20,
		Adaptive: true, Cluster: &flow.ClusterSpec{Threshold: "per_instance"}}
	wu := &flow.Rule{ID: "wu", Algorithm: flow.AlgoWarmUp, Limit: 200, Window: time.Second, Warmup: time.Second, ColdFactor: 3}
	p, err := newPlan("p:", &flow.TokenRequest{Resource: "r", Rules: []*flow.Rule{tb, wu}, Factor: 0.5}, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	// tb: 10 x 3 instances x 0.5 = 15 per 2s: stable 133333.3us, burst 20 x 15/10 = 30.
	got := p.params[:4]
	want := []any{"1", "133333.33333333334", "30", "0"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("token bucket params %v, want %v", got, want)
		}
	}
	// wu (Guava): stable 5000us, threshold 100, max 200, slope 100, coolDown 5000.
	got = p.params[p.paramAt[1]:]
	want = []any{"2", "5000", "200", "0", "100", "100", "5000"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("warm_up params %v, want %v", got, want)
		}
	}
	if leasable(wu) || !leasable(tb) {
		t.Fatal("warm_up must not be leasable, token_bucket must")
	}
	if p.leasable {
		t.Fatal("a plan with a warm_up rule is not leasable")
	}
}

// TestCallerCancellationDoesNotOpenBreaker: calls the caller cancelled
// fail, but say nothing about Redis, so the breaker stays closed.
func TestCallerCancellationDoesNotOpenBreaker(t *testing.T) {
	srv := redistest.Start(t)
	ts := newServer(t, srv.NewClient(nil))
	req := flow.TokenRequest{Resource: "r", Tokens: 1, Factor: 1, Rules: []*flow.Rule{
		{ID: "r", Algorithm: flow.AlgoFixedWindow, Limit: 10, Window: time.Second, Cluster: &flow.ClusterSpec{Threshold: "global"}}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 10 {
		if _, err := ts.Acquire(ctx, req); !errors.Is(err, flow.ErrTokenServerUnavailable) {
			t.Fatalf("cancelled call: %v, want an error wrapping ErrTokenServerUnavailable", err)
		}
	}
	if ts.BreakerOpen() {
		t.Fatal("the caller's cancellations opened the breaker")
	}
}
