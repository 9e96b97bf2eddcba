package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/go-redis/redis_rate/v10"
)

// BenchmarkClusterRatio measures flowgate's cost per decision against
// redis_rate's in alternating rounds on the same Redis, so both see the
// same background load on a shared machine: each b.N is one round of
// 20 000 decisions per side from 16 goroutines. It reports the ratio of
// the time per decision (flowgate / redis_rate) for a hot key and for
// 100 000 keys.
//
//	cd bench && go test -run XXX -bench ClusterRatio -benchtime 10x
func BenchmarkClusterRatio(b *testing.B) {
	srv := redistest.Start(b)
	for _, keys := range []int{1, 100_000} {
		shape := "hot-key"
		if keys > 1 {
			shape = "100k-keys"
		}
		b.Run(shape, func(b *testing.B) {
			rr := redis_rate.NewLimiter(clusterClient(b, srv))
			limit := redis_rate.Limit{Rate: clusterRate, Burst: clusterBurst, Period: time.Second}
			ts, err := cluster.NewRedisTokenServer(clusterClient(b, srv), cluster.WithTimeout(time.Minute))
			if err != nil {
				b.Fatal(err)
			}
			defer ts.Close()
			rule := flow.Rule{ID: "bench", Resource: "bench", Level: flow.LevelUser, Algorithm: flow.AlgoTokenBucket,
				Limit: clusterRate, Burst: clusterBurst, Window: time.Second, Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "deny"}}.WithDefaults()
			req := flow.TokenRequest{Resource: "bench", Level: flow.LevelUser, Tokens: 1, Rules: []*flow.Rule{&rule}, Factor: 1}
			sides := []clusterDecide{
				func(ctx context.Context, i int) error {
					_, err := rr.Allow(ctx, clusterKeyFor(keys, i), limit)
					return err
				},
				func(ctx context.Context, i int) error {
					r := req
					r.Key = clusterKeyFor(keys, i)
					_, err := ts.Acquire(ctx, r)
					return err
				},
			}
			var spent [2]time.Duration
			const perRound = 20_000
			for range b.N {
				for side, d := range sides {
					spent[side] += clusterRound(b, d, perRound, 16)
				}
			}
			b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N*perRound), "redis_rate-ns/decision")
			b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N*perRound), "flowgate-ns/decision")
			b.ReportMetric(float64(spent[1])/float64(spent[0]), "flowgate/redis_rate")
		})
	}
}

// clusterRound makes n decisions from g goroutines and returns the time taken.
func clusterRound(b *testing.B, d clusterDecide, n, g int) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				if err := d(ctx, i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}
