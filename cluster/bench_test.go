package cluster

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

func benchServer(b *testing.B, opts ...Option) *RedisTokenServer {
	srv := redistest.Start(b)
	// A generous timeout: a benchmark on shared cores measures cost, not outages.
	ts, err := NewRedisTokenServer(srv.NewClient(nil), append([]Option{WithTimeout(time.Second)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ts.Close() })
	return ts
}

func benchRule(level flow.Level) *flow.Rule {
	r := crule("r", "bench", flow.AlgoTokenBucket, 1e9, time.Second) // never refuses: measures the decision
	r.Level = level
	r = r.WithDefaults()
	return &r
}

// BenchmarkAcquire is the cost of one decision in Redis: one round trip,
// one script call.
func BenchmarkAcquire(b *testing.B) {
	for _, bc := range []struct {
		name  string
		level flow.Level
		keys  int
	}{{"hot key", flow.LevelGlobal, 0}, {"100k users", flow.LevelUser, 100000}} {
		b.Run(bc.name, func(b *testing.B) {
			ts := benchServer(b)
			req := flow.TokenRequest{Resource: "bench", Level: bc.level, Tokens: 1, Rules: []*flow.Rule{benchRule(bc.level)}, Factor: 1}
			keys := make([]string, max(1, bc.keys))
			for i := range keys {
				keys[i] = "user-" + strconv.Itoa(i)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if bc.keys > 0 {
					req.Key = keys[i%len(keys)]
				}
				if res, err := ts.Acquire(ctx, req); err != nil || !res.Allowed {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// BenchmarkAcquireParallel keeps many decisions in flight, as a busy
// service does: throughput rather than latency.
func BenchmarkAcquireParallel(b *testing.B) {
	for _, leased := range []bool{false, true} {
		name := "direct"
		var opts []Option
		if leased {
			name = "leased"
			opts = append(opts, WithLeasing(LeaseConfig{}))
		}
		b.Run(name, func(b *testing.B) {
			ts := benchServer(b, opts...)
			req := flow.TokenRequest{Resource: "bench", Level: flow.LevelGlobal, Tokens: 1, Rules: []*flow.Rule{benchRule(flow.LevelGlobal)}, Factor: 1}
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if res, err := ts.Acquire(ctx, req); err != nil || !res.Allowed {
						b.Fatal(res, err)
					}
				}
			})
		})
	}
}

// BenchmarkEntryCluster is a whole Entry/Exit through the engine with one
// cluster rule at the user level.
func BenchmarkEntryCluster(b *testing.B) {
	ts := benchServer(b)
	e := flow.NewEngine(flow.WithTokenServer(ts))
	if err := e.LoadRules([]flow.Rule{*benchRule(flow.LevelUser)}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := e.Entry("bench", flow.WithUser("alice"))
		if err != nil {
			b.Fatal(err)
		}
		p.Exit()
	}
}
