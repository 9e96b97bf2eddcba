package bench

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
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
// Both sides get the same limit, one they never reach in a run: a burst of
// 1e8 refilled at 1 per second. So the figures are the cost of an admitting
// decision, redis_rate's GCRA script against flowgate's token_bucket
// (Guava) script through the token server, and each key's state lives
// about as long on both sides (about a second per permit taken: flowgate
// expires a key when its bucket is full again, redis_rate after its reset
// rounded up to whole seconds). A fast refill would let flowgate's keys go
// within a millisecond and make every call to a cold key a creation; an
// absurd rate (1e9/s) lets redis_rate's float seconds skip its write.
const (
	clusterRate  = 1 // per second
	clusterBurst = 100_000_000
)

// clusterLatencies is a lock-free histogram of decision latencies in
// microseconds, allocated once, so recording costs no allocation per call.
type clusterLatencies struct {
	us [200_001]atomic.Uint64 // the last bucket holds everything >= 200ms
}

func (l *clusterLatencies) record(d time.Duration) {
	l.us[min(int(d.Microseconds()), len(l.us)-1)].Add(1)
}

func (l *clusterLatencies) quantile(q float64) time.Duration {
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

// clusterDecide is one decision for key number i.
type clusterDecide func(ctx context.Context, i int) error

// clusterDecisions drives d from 8 goroutines per core and reports
// throughput and latency quantiles beside ns/op and allocs/op, and the
// script's own CPU time per call as Redis measures it (redis-us/call).
func clusterDecisions(b *testing.B, rdb *redis.Client, d clusterDecide) {
	ctx := context.Background()
	// Each side starts on an empty Redis: no keys of the other side's run
	// left to expire meanwhile.
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	lat := new(clusterLatencies)
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
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
	if us, ok := clusterScriptMicros(ctx, rdb); ok {
		b.ReportMetric(us, "redis-us/call")
	}
}

// clusterScriptMicros reads EVALSHA's usec_per_call from INFO commandstats.
func clusterScriptMicros(ctx context.Context, rdb *redis.Client) (float64, bool) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") {
			continue
		}
		for _, f := range strings.Split(strings.TrimSpace(line[len("cmdstat_evalsha:"):]), ",") {
			if v, ok := strings.CutPrefix(f, "usec_per_call="); ok {
				us, err := strconv.ParseFloat(v, 64)
				return us, err == nil
			}
		}
	}
	return 0, false
}

var clusterKeyNames = func() []string {
	ks := make([]string, 100_000)
	for i := range ks {
		ks[i] = "user-" + strconv.Itoa(i)
	}
	return ks
}()

// clusterKeyFor returns the key of call i: always the same one for a hot key.
func clusterKeyFor(keys, i int) string {
	if keys <= 1 {
		return clusterKeyNames[0]
	}
	return clusterKeyNames[i%keys]
}

func clusterClient(b *testing.B, srv *redistest.Server) *redis.Client {
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
			rdb := clusterClient(b, srv)
			lim := redis_rate.NewLimiter(rdb)
			limit := redis_rate.Limit{Rate: clusterRate, Burst: clusterBurst, Period: time.Second}
			clusterDecisions(b, rdb, func(ctx context.Context, i int) error {
				res, err := lim.Allow(ctx, clusterKeyFor(keys, i), limit)
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
				rdb := clusterClient(b, srv)
				ts, err := cluster.NewRedisTokenServer(rdb, append(opts, cluster.WithTimeout(time.Minute))...)
				if err != nil {
					b.Fatal(err)
				}
				defer ts.Close()
				rule := flow.Rule{ID: "bench", Resource: "bench", Level: flow.LevelUser, Algorithm: flow.AlgoTokenBucket,
					Limit: clusterRate, Burst: clusterBurst, Window: time.Second, Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "deny"}}.WithDefaults()
				req := flow.TokenRequest{Resource: "bench", Level: flow.LevelUser, Tokens: 1, Rules: []*flow.Rule{&rule}, Factor: 1}
				clusterDecisions(b, rdb, func(ctx context.Context, i int) error {
					r := req
					r.Key = clusterKeyFor(keys, i)
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
