package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/cluster/envoyrls"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// leaseBenchConfig has one hot descriptor three ways: envoyproxy/ratelimit's
// fixed window (an INCRBY per call), our fixed window decided by the token
// server at every call, and the same leased. The throughput limits are
// never reached; the accuracy ones (…_acc, per second) are. "unlimited"
// is answered without Redis: what a call through the service costs by
// itself, the ceiling of any limit's throughput there.
const leaseBenchConfig = `domain: bench
descriptors:
  - key: unlimited
    rate_limit: {unlimited: true}
  - key: plain
    rate_limit: {unit: minute, requests_per_unit: 4000000000}
  - key: algo
    rate_limit: {unit: minute, requests_per_unit: 4000000000, algorithm: fixed_window}
  - key: leased
    rate_limit: {unit: minute, requests_per_unit: 4000000000, algorithm: fixed_window, lease: {}}
  - key: plain_acc
    rate_limit: {unit: second, requests_per_unit: 1000}
  - key: algo_acc
    rate_limit: {unit: second, requests_per_unit: 1000, algorithm: fixed_window}
  - key: leased_acc
    rate_limit: {unit: second, requests_per_unit: 1000, algorithm: fixed_window, lease: {}}
`

// benchTimeout bounds each token-server call to Redis. The default (20ms),
// and even 250ms, are missed often enough on a loaded 2-core machine (load
// average 30) that the breaker opens and the local fallback decides: that
// would measure the fallback.
const benchTimeout = 2 * time.Second

// inProc calls a Service directly, as a client would through gRPC; its
// token servers say whether any call failed (and fell back).
type inProc struct {
	svc     *envoyrls.Service
	servers *[]*cluster.RedisTokenServer
}

// failed is how many token-server calls failed or met an open breaker.
func (p inProc) failed() uint64 {
	var n uint64
	for _, ts := range *p.servers {
		st := ts.Stats()
		n += st.Errors + st.BreakerRejected
	}
	return n
}

func (p inProc) ShouldRateLimit(ctx context.Context, req *rlspb.RateLimitRequest, _ ...grpc.CallOption) (*rlspb.RateLimitResponse, error) {
	return p.svc.ShouldRateLimit(ctx, req)
}

// hotRun is one closed-loop run on one descriptor value: throughput,
// latency, and the calls admitted per second of the answers' arrival.
type hotRun struct {
	loadResult
	perSecond map[int64]int
}

// driveHot runs callers concurrent callers for d, every request the one
// descriptor key=v.
func driveHot(t *testing.T, c rlspb.RateLimitServiceClient, callers int, key string, d time.Duration) hotRun {
	t.Helper()
	type part struct {
		lat []time.Duration
		ok  map[int64]int
		err error
	}
	parts := make(chan part, callers)
	start := time.Now()
	stop := start.Add(d)
	for range callers {
		go func() {
			p := part{ok: map[int64]int{}}
			req := &rlspb.RateLimitRequest{Domain: "bench", Descriptors: []*rlv3.RateLimitDescriptor{entries(key, "v")}}
			for time.Now().Before(stop) {
				t0 := time.Now()
				resp, err := c.ShouldRateLimit(context.Background(), req)
				if err != nil {
					p.err = err
					break
				}
				now := time.Now()
				p.lat = append(p.lat, now.Sub(t0))
				if resp.OverallCode == rlspb.RateLimitResponse_OK {
					p.ok[now.Unix()]++
				}
			}
			parts <- p
		}()
	}
	out := hotRun{perSecond: map[int64]int{}}
	var all []time.Duration
	for range callers {
		p := <-parts
		if p.err != nil {
			t.Fatal(p.err)
		}
		all = append(all, p.lat...)
		for s, n := range p.ok {
			out.perSecond[s] += n
		}
	}
	elapsed := time.Since(start)
	slices.Sort(all)
	out.loadResult = loadResult{rps: float64(len(all)) / elapsed.Seconds(), p50: all[len(all)/2], p99: all[len(all)*99/100]}
	return out
}

// fullSeconds are the admitted counts of the seconds wholly inside the
// run (the first and last are partial), sorted.
func (r hotRun) fullSeconds() []int {
	var secs []int64
	for s := range r.perSecond {
		secs = append(secs, s)
	}
	slices.Sort(secs)
	var out []int
	for _, s := range secs[1 : len(secs)-1] {
		out = append(out, r.perSecond[s])
	}
	slices.Sort(out)
	return out
}

// inProcService is the Envoy service in this process on rdb, leasing as
// serve does (a leasing token server per lease setting).
func inProcService(t *testing.T, srv *redistest.Server) inProc {
	t.Helper()
	rdb := srv.Client()
	main, err := cluster.NewRedisTokenServer(rdb, cluster.WithTimeout(benchTimeout))
	if err != nil {
		t.Fatal(err)
	}
	all := []*cluster.RedisTokenServer{main}
	t.Cleanup(func() {
		for _, ts := range all {
			ts.Close()
		}
	})
	build := func(ls envoyrls.Lease) (flow.TokenServer, error) {
		ts, err := cluster.NewRedisTokenServer(rdb, cluster.WithTimeout(benchTimeout),
			cluster.WithLeasing(cluster.LeaseConfig{Period: ls.Period, MaxBatch: ls.MaxBatch}))
		if err == nil {
			all = append(all, ts)
		}
		return ts, err
	}
	cfg, err := envoyrls.Parse(envoyrls.File{Name: "c.yaml", Data: []byte(leaseBenchConfig)})
	if err != nil {
		t.Fatal(err)
	}
	store := envoyrls.NewRedisStore(rdb)
	t.Cleanup(func() { store.Close() })
	svc := envoyrls.NewService(envoyrls.WithStore(store), envoyrls.WithKeyPrefix("fg:"),
		envoyrls.WithTokenServer(main), envoyrls.WithLeasing(build))
	if err := svc.Load(cfg); err != nil {
		t.Fatal(err)
	}
	return inProc{svc, &all}
}

// TestEnvoyLeaseThroughput measures one hot descriptor value with 32
// concurrent callers, on one redis-server: envoyproxy/ratelimit's fixed
// window (when FLOWGATE_ENVOY_RATELIMIT_BIN is set), ours counted per call,
// ours decided per call by the token server, and ours leased, each in this
// process and through `flowgate serve`; then, at 1000 per second, what
// each admits per second (FLOWGATE_ENVOY_BENCH_DURATION per run, default 3s).
func TestEnvoyLeaseThroughput(t *testing.T) {
	d := 3 * time.Second
	if s := os.Getenv("FLOWGATE_ENVOY_BENCH_DURATION"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	srv := redistest.Start(t)
	local := inProcService(t, srv)
	serve := startServeProcess(t, srv.Addr, leaseBenchConfig, "-timeout", benchTimeout.String())
	type target struct {
		name string
		c    rlspb.RateLimitServiceClient
		p    *refService // the service's process; nil in this one
	}
	targets := []target{{"in-process", local, nil}, {"serve", dialRLS(t, serve.addr), serve}}
	if bin := os.Getenv("FLOWGATE_ENVOY_RATELIMIT_BIN"); bin != "" {
		ref := startRef(t, bin, srv.Addr, "domain: bench\ndescriptors:\n  - key: unlimited\n    rate_limit: {unlimited: true}\n  - key: plain\n    rate_limit: {unit: minute, requests_per_unit: 4000000000}\n"+
			"  - key: plain_acc\n    rate_limit: {unit: second, requests_per_unit: 1000}\n")
		targets = append(targets, target{"envoyproxy/ratelimit", dialRLS(t, ref.addr), ref})
	}
	for _, tg := range targets {
		keys := []string{"unlimited", "plain", "algo", "leased"}
		if tg.name == "envoyproxy/ratelimit" {
			keys = keys[:2]
		}
		for _, key := range keys {
			driveHot(t, tg.c, 32, key, d/10) // warm up
			var cpu0 time.Duration
			if tg.p != nil {
				cpu0 = tg.p.cpu()
			}
			r := driveHot(t, tg.c, 32, key, d)
			cpu := "" // the service process's own CPU time per request
			if tg.p != nil {
				cpu = fmt.Sprintf("; service CPU %.1f µs/request", float64(tg.p.cpu()-cpu0)/(r.rps*d.Seconds())/1e3)
			}
			if key == "unlimited" {
				t.Logf("%s %s: %.0f req/s p50 %v p99 %v%s", tg.name, key, r.rps, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), cpu)
				continue
			}
			acc := driveHot(t, tg.c, 32, key+"_acc", d)
			t.Logf("%s %s: %.0f req/s p50 %v p99 %v%s; at 1000/s admitted per full second %v",
				tg.name, key, r.rps, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), cpu, acc.fullSeconds())
		}
		if tg.name == "in-process" && local.failed() > 0 {
			t.Errorf("in-process: %d token-server calls failed or met an open breaker: some decisions were the local fallback's", local.failed())
		}
	}
}
