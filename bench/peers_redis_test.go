package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Redis-backed decisions through the whole library, as a service makes
// them: flowgate's Engine.Entry + Exit with a user-level cluster rule
// decided by cluster.RedisTokenServer (with and without leasing), against
// redis_rate's Limiter.Allow, on one redis-server started by
// internal/testing/redistest, for one hot user and for 10 000 and 100 000
// users. Both sides get the limit the BenchmarkCluster comparison uses
// (1/s refill, a burst of 1e8: never
// reached in a run, so every decision admits and each key's state lives
// about as long on both sides); see the note at its constants.
//
//	cd bench && go test -run '^$' -bench 'PeersRedis' -benchmem
//
// Each reports decisions/s and p50/p99 latency (peer-p50-us, peer-p99-us,
// from time.Now around each decision, which adds the same ~50 ns to both
// sides).

// peerRedisClient is a client with the options both sides share: no
// retries (neither side may send a decision twice) and a pool the
// goroutines cannot exhaust.
func peerRedisClient(srv *redistest.Server) *redis.Client {
	o := srv.ClientOptions()
	o.MaxRetries = -1
	o.PoolSize = 32
	return srv.NewClient(o)
}

// peerDecisions drives decide from 8 goroutines per P (16 on this 2-core
// machine, as a busy service keeps many calls in flight) over keys users,
// and reports decisions/s and latency quantiles beside ns/op.
func peerDecisions(b *testing.B, rdb *redis.Client, keys int, decide func(ctx context.Context, user string) error) {
	ctx := context.Background()
	// Each side starts on an empty Redis: no keys of another side left to
	// expire meanwhile.
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	users := peerUsers[:keys]
	hist := new(peerHist)
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			u := users[int(next.Add(1))%keys]
			t := time.Now()
			if err := decide(ctx, u); err != nil {
				b.Error(err)
				return
			}
			hist.record(time.Since(t))
		}
	})
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "decisions/s")
	b.ReportMetric(float64(hist.quantile(0.50))/1e3, "peer-p50-us")
	b.ReportMetric(float64(hist.quantile(0.99))/1e3, "peer-p99-us")
}

// peerClusterEngine is an Engine whose user-level cluster rule is decided
// by a RedisTokenServer on rdb; the caller closes the server. The timeout is a minute, as unbounded as
// redis_rate's wait, and the fallback is deny, so no call is decided
// anywhere but in Redis without the benchmark failing.
func peerClusterEngine(b *testing.B, rdb *redis.Client, keys int, opts ...cluster.Option) (*flow.Engine, *cluster.RedisTokenServer) {
	ts, err := cluster.NewRedisTokenServer(rdb, append(opts, cluster.WithTimeout(time.Minute))...)
	if err != nil {
		b.Fatal(err)
	}
	rule := flow.Rule{ID: "per-user", Resource: "r", Level: flow.LevelUser, Algorithm: flow.AlgoTokenBucket,
		Limit: clusterRate, Burst: clusterBurst, MaxKeys: 2 * keys,
		Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "deny"}}
	return peerEngine(b, []flow.Option{flow.WithTokenServer(ts)}, rule), ts
}

func BenchmarkPeersRedis(b *testing.B) {
	srv := redistest.Start(b)
	for _, keys := range []int{1, 10_000, 100_000} {
		shape := "hot-key"
		if keys > 1 {
			shape = keysName(keys)
		}
		b.Run(shape+"/redis_rate", func(b *testing.B) {
			rdb := peerRedisClient(srv)
			defer rdb.Close()
			lim := redis_rate.NewLimiter(rdb)
			limit := redis_rate.Limit{Rate: clusterRate, Burst: clusterBurst, Period: time.Second}
			peerDecisions(b, rdb, keys, func(ctx context.Context, user string) error {
				res, err := lim.Allow(ctx, user, limit)
				if err == nil && res.Allowed != 1 {
					b.Fatalf("redis_rate refused %s: %+v", user, res)
				}
				return err
			})
		})
		for _, leased := range []bool{false, true} {
			name, opts := "flowgate", []cluster.Option(nil)
			if leased {
				name, opts = "flowgate-leased", []cluster.Option{cluster.WithLeasing(cluster.LeaseConfig{})}
			}
			b.Run(shape+"/"+name, func(b *testing.B) {
				rdb := peerRedisClient(srv)
				defer rdb.Close()
				e, ts := peerClusterEngine(b, rdb, keys, opts...)
				defer ts.Close() // before rdb.Close: it gives unspent leases back
				peerDecisions(b, rdb, keys, func(ctx context.Context, user string) error {
					p, err := e.Entry("r", flow.WithContext(ctx), flow.WithUser(user))
					if err != nil {
						return err
					}
					p.Exit()
					return nil
				})
				st := ts.Stats()
				b.ReportMetric(float64(st.Passed+st.Blocked+st.Errors)/float64(b.N), "trips/decision")
			})
		}
	}
}
