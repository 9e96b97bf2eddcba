package remote

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// BenchmarkRemoteVsEmbedded compares, on one Redis in one run, a decision
// made by the embedded RedisTokenServer with the same decision asked of one
// serve replica over loopback gRPC: decisions/s and the p99 latency of one
// decision, with 1 and 8 callers per core. The remote figures include the
// replica's own work (it runs in the same process), so B/op and allocs/op
// are client and server together.
func BenchmarkRemoteVsEmbedded(b *testing.B) {
	srv := redistest.Start(b)
	embedded := func(b *testing.B) flow.TokenServer {
		return newBenchTS(b, srv)
	}
	remote := func(b *testing.B) flow.TokenServer {
		rep := startRemoteReplicaB(b, newBenchTS(b, srv))
		c, err := New([]string{rep}, WithTimeout(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	for _, bc := range []struct {
		name string
		ts   func(*testing.B) flow.TokenServer
	}{{"embedded", embedded}, {"remote 1 replica", remote}} {
		for _, callers := range []int{1, 8} {
			b.Run(bc.name+"/callers per core "+strconv.Itoa(callers), func(b *testing.B) {
				benchDecisions(b, bc.ts(b), callers)
			})
		}
	}
}

// benchDecisions makes b.N decisions from callers goroutines per core and
// reports decisions/s and the p99 latency of one decision.
func benchDecisions(b *testing.B, ts flow.TokenServer, callers int) {
	req := flow.TokenRequest{Resource: "bench", Level: flow.LevelGlobal, Tokens: 1, Rules: []*flow.Rule{benchRule()}, Factor: 1}
	var mu sync.Mutex
	var all []time.Duration
	b.ReportAllocs()
	b.SetParallelism(callers)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		lat := make([]time.Duration, 0, 1024)
		for pb.Next() {
			t := time.Now()
			if res, err := ts.Acquire(ctx, req); err != nil || !res.Allowed {
				b.Fatal(res, err)
			}
			lat = append(lat, time.Since(t))
		}
		mu.Lock()
		all = append(all, lat...)
		mu.Unlock()
	})
	el := time.Since(start)
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/el.Seconds(), "decisions/s")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}

func newBenchTS(b *testing.B, srv *redistest.Server) *cluster.RedisTokenServer {
	ts, err := cluster.NewRedisTokenServer(srv.NewClient(nil), cluster.WithTimeout(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ts.Close() })
	return ts
}

// benchRule is a global token bucket that never refuses: it measures the
// decision.
func benchRule() *flow.Rule {
	r := crule("r", "bench", flow.AlgoTokenBucket, 1e9, time.Second).WithDefaults()
	return &r
}

// BenchmarkRemoteParam is BenchmarkRemoteVsEmbedded's decision at the param
// level, one caller per core: a token bucket per tenant over 10 000
// tenants, asked of the embedded RedisTokenServer and of one serve replica
// in the same run. A keyed request builds its Redis keys per call (the
// global level's are built once), so it allocates a little more.
func BenchmarkRemoteParam(b *testing.B) {
	srv := redistest.Start(b)
	r := crule("per-tenant", "bench", flow.AlgoTokenBucket, 1e9, time.Second)
	r.Level, r.Param = flow.LevelParam, "tenant"
	r = r.WithDefaults()
	tenants := make([]string, 10000)
	for i := range tenants {
		tenants[i] = "tenant-" + strconv.Itoa(i)
	}
	for _, bc := range []struct {
		name string
		ts   func(*testing.B) flow.TokenServer
	}{
		{"embedded", func(b *testing.B) flow.TokenServer { return newBenchTS(b, srv) }},
		{"remote 1 replica", func(b *testing.B) flow.TokenServer {
			c, err := New([]string{startRemoteReplicaB(b, newBenchTS(b, srv))}, WithTimeout(time.Second))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			return c
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ts := bc.ts(b)
			req := flow.TokenRequest{Resource: "bench", Level: flow.LevelParam, Tokens: 1, Rules: []*flow.Rule{&r}, Factor: 1}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				req.Key = tenants[i]
				if res, err := ts.Acquire(context.Background(), req); err != nil || !res.Allowed {
					b.Fatal(res, err)
				}
				if i++; i == len(tenants) {
					i = 0
				}
			}
		})
	}
}
