package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

const envoyYAML = `domain: edge
descriptors:
  - key: remote_address
    detailed_metric: true
    rate_limit: {unit: hour, requests_per_unit: 2}
`

// startEnvoyServe runs serve with args and returns the Envoy and metrics
// addresses it printed, its exit code channel and its stderr.
func startEnvoyServe(t *testing.T, ctx context.Context, args ...string) (string, string, chan int, *syncBuilder) {
	t.Helper()
	out, w := io.Pipe()
	code, stderr := make(chan int, 1), new(syncBuilder)
	go func() {
		code <- serveUntil(ctx, args, w, stderr)
		w.Close()
	}()
	lines := bufio.NewScanner(out)
	addr, metricsAddr := "", ""
	for addr == "" || metricsAddr == "" {
		if !lines.Scan() {
			t.Fatalf("serve ended before Envoy's service and metrics listened: %s", stderr.String())
		}
		if a, ok := strings.CutPrefix(lines.Text(), "envoy rate limit service on "); ok {
			addr = a
		}
		if a, ok := strings.CutPrefix(lines.Text(), "metrics on "); ok {
			metricsAddr = a
		}
	}
	go io.Copy(io.Discard, out)
	return addr, metricsAddr, code, stderr
}

func TestServeEnvoy(t *testing.T) {
	for _, mode := range []string{"redis", "redis-unbatched", "local"} {
		store, _, unbatched := strings.Cut(mode, "-")
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "edge.yaml"), []byte(envoyYAML), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			addr, metricsAddr, code, stderr := startEnvoyServe(t, ctx, "-listen", "127.0.0.1:0", "-redis", srv.Addr, "-metrics-listen", "127.0.0.1:0",
				"-envoy-listen", "127.0.0.1:0", "-envoy-config", dir, "-envoy-store", store, "-envoy-headers", "-envoy-redis-pipelines", map[bool]string{false: "2", true: "0"}[unbatched])
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			c := rlspb.NewRateLimitServiceClient(conn)
			req := &rlspb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
				{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.0.0.1"}}}}}
			var codes []rlspb.RateLimitResponse_Code
			for range 3 {
				r, err := c.ShouldRateLimit(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, r.OverallCode)
				if len(r.ResponseHeadersToAdd) != 3 {
					t.Errorf("headers %v, want 3 (-envoy-headers)", r.ResponseHeadersToAdd)
				}
			}
			if codes[0] != rlspb.RateLimitResponse_OK || codes[1] != rlspb.RateLimitResponse_OK || codes[2] != rlspb.RateLimitResponse_OVER_LIMIT {
				t.Errorf("codes %v, want OK OK OVER_LIMIT", codes)
			}
			keys := srv.Client().Keys(context.Background(), "edge_*").Val()
			if (store == "redis") != (len(keys) == 1) {
				t.Errorf("store %s: Redis holds %v", store, keys)
			}
			h, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"})
			if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("health: %v %v", h, err)
			}
			if local := strings.Contains(stderr.String(), "decisions local to this process"); local != (store == "local") {
				t.Errorf("store %s: said local=%v at start: %s", store, local, stderr.String())
			}
			checkEnvoyMetrics(t, metricsAddr, store == "redis")
			cancel()
			if c := <-code; c != exitOK {
				t.Errorf("exit %d: %s", c, stderr.String())
			}
		})
	}
}

func TestServeEnvoyFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-envoy-listen", "127.0.0.1:0"}, "-envoy-listen and -envoy-config go together"},
		{[]string{"-envoy-listen", "127.0.0.1:0", "-envoy-config", "x", "-envoy-store", "disk"}, `store "disk"`},
		{[]string{"-envoy-listen", "127.0.0.1:0", "-envoy-config", "x", "-envoy-redis-pipelines", "-1"}, "pipelines -1"},
		{[]string{"-envoy-listen", "127.0.0.1:0", "-envoy-config", "x", "-envoy-redis-max-batch", "1"}, "maxBatch 1"},
	} {
		stderr := new(syncBuilder)
		if c := serveUntil(context.Background(), tc.args, io.Discard, stderr); c != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want a usage error saying %q", tc.args, c, stderr.String(), tc.want)
		}
	}
	// A bad configuration stops serve at start, naming the file.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("domain: d\ndescriptors: [{key: k, rate_limit: {unit: fortnight}}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr := new(syncBuilder)
	srv := redistest.Start(t)
	c := serveUntil(context.Background(), []string{"-listen", "127.0.0.1:0", "-redis", srv.Addr, "-envoy-listen", "127.0.0.1:0", "-envoy-config", bad}, io.Discard, stderr)
	if c != exitInvalid || !strings.Contains(stderr.String(), bad) {
		t.Errorf("exit %d, %q; want the bad file named", c, stderr.String())
	}
}

// checkEnvoyMetrics reads /metrics after two admitted calls and a refused
// one, made one after the other: with the Redis store, each call's one
// counter went in a pipeline of its own (INCRBY and EXPIRE).
func checkEnvoyMetrics(t *testing.T, metricsAddr string, redisStore bool) {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"flowgate_envoy_requests_total 3", `flowgate_envoy_hits_total{domain="edge",limit="edge.remote_address",outcome="over"} 1`,
		`flowgate_envoy_hits_total{domain="edge",limit="edge.remote_address",outcome="within"} 2`,
		`flowgate_envoy_value_hits_total{domain="edge",limit="edge.remote_address",outcome="within",value="remote_address_10.0.0.1"} 2`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, line := range []string{"flowgate_envoy_redis_pipelines_total 3", "flowgate_envoy_redis_requests_total 3",
		"flowgate_envoy_redis_commands_total 6", "flowgate_envoy_redis_in_flight 0", "flowgate_envoy_redis_queued 0"} {
		if has := strings.Contains(string(body), line+"\n"); has != redisStore {
			t.Errorf("/metrics has %q: %v; want %v (the Redis store's series, only with it)", line, has, redisStore)
		}
	}
	// The admin console's Envoy view.
	resp, err = http.Get("http://" + metricsAddr + "/flowgate/api/envoy")
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Domains []admin.EnvoyDomain }
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	want := admin.EnvoyLimit{Path: "edge.remote_address", RequestsPerUnit: 2, Unit: "hour", Within: 2, Over: 1}
	if err != nil || len(got.Domains) != 1 || got.Domains[0].Domain != "edge" || len(got.Domains[0].Limits) != 1 || got.Domains[0].Limits[0] != want {
		t.Errorf("/flowgate/api/envoy = %+v, %v; want domain edge with %+v", got, err, want)
	}
}

// TestServeEnvoyLease: a leased descriptor is served from batches taken
// from Redis (1, 2, then 4 permits for 4 calls), and stopping serve gives
// the unspent permits back.
func TestServeEnvoyLease(t *testing.T) {
	srv := redistest.Start(t)
	cfg := filepath.Join(t.TempDir(), "edge.yaml")
	yaml := "domain: edge\ndescriptors:\n  - key: hot\n    rate_limit: {unit: hour, requests_per_unit: 1000, lease: {period: 30s}}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Redis calls bounded at 2s: on a loaded machine the default 20ms is
	// missed at times, and a decision then falls back to the process.
	addr, _, code, stderr := startEnvoyServe(t, ctx, "-listen", "127.0.0.1:0", "-redis", srv.Addr, "-metrics-listen", "127.0.0.1:0",
		"-envoy-listen", "127.0.0.1:0", "-envoy-config", cfg, "-timeout", "2s")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := rlspb.NewRateLimitServiceClient(conn)
	req := &rlspb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "hot", Value: "v"}}}}}
	for i := range 4 {
		if r, err := c.ShouldRateLimit(context.Background(), req); err != nil || r.OverallCode != rlspb.RateLimitResponse_OK {
			t.Fatalf("call %d: %v, %v", i, r, err)
		}
	}
	if got := countedInRedis(t, srv); got != 7 {
		t.Errorf("Redis counted %d permits for 4 calls, want 7 (batches of 1, 2 and 4)", got)
	}
	cancel()
	if c := <-code; c != exitOK {
		t.Fatalf("exit %d: %s", c, stderr.String())
	}
	if got := countedInRedis(t, srv); got != 4 {
		t.Errorf("after stop Redis counts %d, want 4 (the 3 unspent given back)", got)
	}
}

// countedInRedis sums the token server's fixed-window counters.
func countedInRedis(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	rdb := srv.Client()
	n := 0
	for _, k := range rdb.Keys(context.Background(), "flowgate:*").Val() {
		if rdb.Type(context.Background(), k).Val() == "hash" {
			c, _ := rdb.HGet(context.Background(), k, "c").Int()
			n += c
		}
	}
	return n
}

// TestServeEnvoyHashTag: -envoy-hash-tag names the counters {domain}_….
func TestServeEnvoyHashTag(t *testing.T) {
	srv := redistest.Start(t)
	cfg := filepath.Join(t.TempDir(), "edge.yaml")
	if err := os.WriteFile(cfg, []byte(envoyYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, _, code, stderr := startEnvoyServe(t, ctx, "-listen", "127.0.0.1:0", "-redis", srv.Addr, "-metrics-listen", "127.0.0.1:0",
		"-envoy-listen", "127.0.0.1:0", "-envoy-config", cfg, "-envoy-hash-tag")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &rlspb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.0.0.1"}}}}}
	if _, err := rlspb.NewRateLimitServiceClient(conn).ShouldRateLimit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if keys := srv.Client().Keys(context.Background(), "{edge}_remote_address_10.0.0.1_*").Val(); len(keys) != 1 {
		t.Errorf("keys %v, want one {edge}_… counter", keys)
	}
	cancel()
	if c := <-code; c != exitOK {
		t.Fatalf("exit %d: %s", c, stderr.String())
	}
}
