package cluster

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

// neverRule is a cluster rule of algo with limit 5 per second (in flight
// for concurrency); queue gives it a MaxWait.
func neverRule(res string, algo flow.Algorithm, queue bool) flow.Rule {
	r := crule("x", res, algo, 5, time.Second)
	switch algo {
	case flow.AlgoWarmUp:
		r.Warmup = 10 * time.Second
	case flow.AlgoConcurrency:
		r.Window = 0
	}
	if queue {
		r.MaxWait = time.Hour
	}
	return r
}

// keysOf counts the Redis keys of resource res.
func keysOf(t *testing.T, rdb redis.UniversalClient, res string) int {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), "*"+res+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// TestTokensBeyondRuleNeverInRedis (issue 33, B1): through the Redis token
// server, with and without leasing, a request of math.MaxInt32 tokens of
// a limit-5 rule is refused at once as never on every algorithm, writes
// no key, and the next call of one token passes. A tokens count below 1
// counts as one, as locally.
func TestTokensBeyondRuleNeverInRedis(t *testing.T) {
	srv := redistest.Start(t)
	for _, lease := range []bool{false, true} {
		for code := 1; code <= numAlgos; code++ {
			for _, queue := range []bool{false, true} {
				algo := spec(code).algo
				if queue && algo == flow.AlgoConcurrency {
					continue
				}
				name := algo.String()
				if queue {
					name += "/maxWait"
				}
				if lease {
					name += "/leased"
				}
				t.Run(name, func(t *testing.T) {
					var opts []Option
					if lease {
						opts = append(opts, WithLeasing(LeaseConfig{}))
					}
					rdb := srv.NewClient(nil)
					res := uniq(algo.String())
					e := newEngine(t, newServer(t, rdb, opts...), t0, neverRule(res, algo, queue))
					for _, n := range []int{6, math.MaxInt32} {
						_, err := e.Entry(res, flow.WithTokens(n))
						var be *flow.BlockError
						if !errors.As(err, &be) || !be.Never || be.RetryAfter != flow.Never || be.Reason != flow.ReasonClusterLimited {
							t.Fatalf("WithTokens(%d): got %v, want a never refusal", n, err)
						}
					}
					if k := keysOf(t, rdb, res); k != 0 {
						t.Fatalf("the refusals wrote %d keys, want none", k)
					}
					// One call (leaky_bucket and warm_up space the next),
					// of WithTokens(0): one token, as locally.
					p, err := e.Entry(res, flow.WithTokens(0))
					if err != nil {
						t.Fatalf("WithTokens(0) after the refusals: %v", err)
					}
					p.Exit()
				})
			}
		}
	}
}

// TestScriptsRefuseBeyondMost: the scripts themselves refuse a request
// above a rule's most as never (reply retry-after -1) and write nothing,
// whatever the Go side checked first; the whole most passes.
func TestScriptsRefuseBeyondMost(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.NewClient(nil)
	s := newServer(t, rdb)
	ctx := context.Background()
	for code := 1; code <= numAlgos; code++ {
		algo := spec(code).algo
		t.Run(algo.String(), func(t *testing.T) {
			res := uniq(algo.String())
			r := neverRule(res, algo, false).WithDefaults()
			req := flow.TokenRequest{Resource: res, Tokens: 1, Rules: []*flow.Rule{&r}, Factor: 1}
			p, err := s.plan(&req)
			if err != nil {
				t.Fatal(err)
			}
			if p.most != 5 {
				t.Fatalf("most = %d, want 5", p.most)
			}
			nonce := s.newNonce()
			got, err := s.call(ctx, mainAcquire, p, "", nonce, math.MaxInt32, 6, nil)
			if err != nil || got.allowed || !got.never || got.retryAfter() != flow.Never {
				t.Fatalf("MaxInt32 tokens: %+v, %v; want never", got, err)
			}
			if k := keysOf(t, rdb, res); k != 0 {
				t.Fatalf("the refusal wrote %d keys, want none", k)
			}
			got, err = s.call(ctx, mainAcquire, p, "", nonce, 5, 6, nil)
			if err != nil || !got.allowed {
				t.Fatalf("5 tokens, the whole limit: %+v, %v; want allowed", got, err)
			}
		})
	}
}
