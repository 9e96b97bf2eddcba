package cluster

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkScriptTime reports Redis's own time per decision script
// (INFO commandstats: usec_per_call of EVALSHA), the part of a decision's
// cost that runs single-threaded in Redis, for one rule of each common
// algorithm and for a level of three rules.
func BenchmarkScriptTime(b *testing.B) {
	srv := redistest.Start(b)
	for _, bc := range []struct {
		name  string
		rules []flow.Algorithm
	}{
		{"token_bucket", []flow.Algorithm{flow.AlgoTokenBucket}},
		{"fixed_window", []flow.Algorithm{flow.AlgoFixedWindow}},
		{"sliding_window", []flow.Algorithm{flow.AlgoSlidingWindow}},
		{"three rules", []flow.Algorithm{flow.AlgoTokenBucket, flow.AlgoFixedWindow, flow.AlgoSlidingWindow}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rdb := srv.NewClient(nil)
			ts, err := NewRedisTokenServer(rdb, WithTimeout(time.Second), WithHeartbeat(0, 0))
			if err != nil {
				b.Fatal(err)
			}
			defer ts.Close()
			req := flow.TokenRequest{Resource: "script-" + bc.name, Level: flow.LevelUser, Tokens: 1, Factor: 1}
			for i, a := range bc.rules {
				r := crule("r"+strconv.Itoa(i), req.Resource, a, 1e9, time.Second) // never refuses
				r.Level = flow.LevelUser
				r = r.WithDefaults()
				req.Rules = append(req.Rules, &r)
			}
			ctx := context.Background()
			run := func(n int) {
				for i := range n {
					req.Key = "u" + strconv.Itoa(i%1000)
					if res, err := ts.Acquire(ctx, req); err != nil || !res.Allowed {
						b.Fatal(res, err)
					}
				}
			}
			run(10) // scripts loaded
			rdb.ConfigResetStat(ctx)
			b.ReportAllocs()
			b.ResetTimer()
			run(b.N)
			b.StopTimer()
			b.ReportMetric(evalshaMicros(b, rdb), "redis-us/call")
		})
	}
}

// evalshaMicros reads usec_per_call of EVALSHA from INFO commandstats.
func evalshaMicros(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") {
			continue
		}
		for _, f := range strings.Split(strings.TrimSpace(strings.TrimPrefix(line, "cmdstat_evalsha:")), ",") {
			if v, ok := strings.CutPrefix(f, "usec_per_call="); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				return x
			}
		}
	}
	b.Fatalf("no evalsha in commandstats: %q", info)
	return 0
}
