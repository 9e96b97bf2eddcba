package bench

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/redistest"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// The cluster comparison: one decision per call against the same Redis,
// with the same client options, many calls in flight (as a busy service
// has), for one hot key and for 100 000 keys. Each benchmark reports
// decisions/s and the p50/p99 latency of a decision.
//
//	cd bench && go test -run XXX -bench Cluster -benchtime 3s
//
// Both sides are asked for a limit they never reach, so the figures are the
// cost of an admitting decision: redis_rate's GCRA script against
// flowgate's token_bucket (Guava) script through the token server. The
// rate is high but not absurd: at 1e9/s redis_rate's float seconds cannot
// tell one emission interval from none, and it skips its write.

const hugeRate = 1_000_000 // per second, burst the same: never refuses here

// latencies is a lock-free histogram of decision latencies in microseconds,
// allocated once, so recording costs no allocation per call.
type latencies struct {
	us [200_001]atomic.Uint64 // the last bucket holds everything >= 200ms
}

func (l *latencies) record(d time.Duration) {
	l.us[min(int(d.Microseconds()), len(l.us)-1)].Add(1)
}

func (l *latencies) quantile(q float64) time.Duration {
	var total uint64
	for i := range l.us {
		total += l.us[i].Load()
	}
	want := uint64(q * float64(total))
	var seen uint64
	for i := range l.us {
		seen += l.us[i].Load()
		if seen > want {
			return time.Duration(i) * time.Microsecond
		}
	}
	return 0
}

// decide is one decision for key number i.
type decide func(ctx context.Context, i int) error

// runDecisions drives decide from 8 goroutines per core and reports
// throughput and latency quantiles beside ns/op and allocs/op.
func runDecisions(b *testing.B, d decide) {
	lat := new(latencies)
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			i := int(next.Add(1))
			t := time.Now()
			if err := d(ctx, i); err != nil {
				b.Error(err)
				return
			}
			lat.record(time.Since(t))
		}
	})
	el := time.Since(start)
	b.ReportMetric(float64(b.N)/el.Seconds(), "decisions/s")
	b.ReportMetric(float64(lat.quantile(0.50).Microseconds()), "p50-us")
	b.ReportMetric(float64(lat.quantile(0.99).Microseconds()), "p99-us")
}

var keyNames = func() []string {
	ks := make([]string, 100_000)
	for i := range ks {
		ks[i] = "user-" + strconv.Itoa(i)
	}
	return ks
}()

// keyFor returns the key of call i: always the same one for a hot key.
func keyFor(keys, i int) string {
	if keys <= 1 {
		return keyNames[0]
	}
	return keyNames[i%keys]
}

func clientOn(b *testing.B, srv *redistest.Server) *redis.Client {
	o := srv.ClientOptions()
	o.MaxRetries = -1 // neither side may re-send a decision
	o.PoolSize = 32
	return srv.NewClient(o)
}

func BenchmarkCluster(b *testing.B) {
	srv := redistest.Start(b)
	for _, keys := range []int{1, 100_000} {
		shape := "hot-key"
		if keys > 1 {
			shape = "100k-keys"
		}
		b.Run("redis_rate/"+shape, func(b *testing.B) {
			lim := redis_rate.NewLimiter(clientOn(b, srv))
			limit := redis_rate.PerSecond(hugeRate)
			runDecisions(b, func(ctx context.Context, i int) error {
				res, err := lim.Allow(ctx, keyFor(keys, i), limit)
				if err == nil && res.Allowed != 1 {
					b.Fatalf("redis_rate refused: %+v", res)
				}
				return err
			})
		})
		for _, leased := range []bool{false, true} {
			name := "flowgate/"
			var opts []cluster.Option
			if leased {
				name = "flowgate-leased/"
				opts = append(opts, cluster.WithLeasing(cluster.LeaseConfig{}))
			}
			b.Run(name+shape, func(b *testing.B) {
				// The same unbounded wait as redis_rate: no per-call timeout.
				ts, err := cluster.NewRedisTokenServer(clientOn(b, srv), append(opts, cluster.WithTimeout(time.Minute))...)
				if err != nil {
					b.Fatal(err)
				}
				defer ts.Close()
				rule := flow.Rule{ID: "bench", Resource: "bench", Level: flow.LevelUser, Algorithm: flow.AlgoTokenBucket,
					Limit: hugeRate, Window: time.Second, Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "deny"}}.WithDefaults()
				req := flow.TokenRequest{Resource: "bench", Level: flow.LevelUser, Tokens: 1, Rules: []*flow.Rule{&rule}, Factor: 1}
				runDecisions(b, func(ctx context.Context, i int) error {
					r := req
					r.Key = keyFor(keys, i)
					res, err := ts.Acquire(ctx, r)
					if err == nil && !res.Allowed {
						b.Fatalf("flowgate refused: %+v", res)
					}
					return err
				})
				st := ts.Stats()
				b.ReportMetric(float64(st.Passed+st.Blocked+st.Errors)/float64(b.N), "trips/decision")
			})
		}
	}
}
