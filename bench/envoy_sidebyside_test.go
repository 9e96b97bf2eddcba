package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/flowgate/flowgate/cluster/envoyrls"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// The side-by-side tests run envoyproxy/ratelimit itself, built from its
// repository by the person running them (CI cannot build it):
//
//	FLOWGATE_ENVOY_RATELIMIT_BIN  its service binary (go build ./src/service_cmd)
//	FLOWGATE_ENVOY_RATELIMIT_SRC  its source tree, whose example and test configs are replayed
//
// Without the binary they skip.
func envoyReference(t *testing.T) (bin, src string) {
	bin, src = os.Getenv("FLOWGATE_ENVOY_RATELIMIT_BIN"), os.Getenv("FLOWGATE_ENVOY_RATELIMIT_SRC")
	if bin == "" {
		t.Skip("FLOWGATE_ENVOY_RATELIMIT_BIN unset: no envoyproxy/ratelimit binary to compare with")
	}
	return bin, src
}

// ourConfig is a config of ours in envoyproxy/ratelimit's YAML, beside
// theirs: every unit, nesting, wildcards, replaces, shadow, unlimited.
const ourConfig = `domain: ours
descriptors:
  - key: client
    rate_limit: {unit: minute, requests_per_unit: 4}
  - key: client
    value: vip
    rate_limit: {unit: hour, requests_per_unit: 6, name: vip, replaces: [{name: route_default}]}
  - key: route
    rate_limit: {unit: day, requests_per_unit: 3, name: route_default}
  - key: route
    value: /api/*
    rate_limit: {unit: week, requests_per_unit: 5}
  - key: route
    value: /a*b*c
    share_threshold: true
    rate_limit: {unit: month, requests_per_unit: 2}
  - key: tenant
    value: t1
    rate_limit: {unit: year, requests_per_unit: 7}
    descriptors:
      - key: user
        shadow_mode: true
        rate_limit: {unit: minute, requests_per_unit: 1}
      - key: free
        rate_limit: {unlimited: true}
`

// refService is a running envoyproxy/ratelimit process.
type refService struct {
	addr string
	cmd  *exec.Cmd
}

// cpu is the CPU time (user and system) the service's process has used
// so far, read from /proc; 0 where /proc is not there.
func (r *refService) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which ends at the last ')':
	// utime and stime are the 12th and 13th, in clock ticks (100 a second
	// on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

func freeAddr(t *testing.T) (string, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1", l.Addr().(*net.TCPAddr).Port
}

// startRef runs the reference with one config file on redisAddr, with
// response headers on and env added to its environment, and waits until
// it answers.
func startRef(t *testing.T, bin, redisAddr, config string, env ...string) *refService {
	t.Helper()
	root := t.TempDir()
	cfgDir := filepath.Join(root, "rl", "config")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "c.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	host, grpcPort := freeAddr(t)
	_, port := freeAddr(t)
	_, debugPort := freeAddr(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "USE_STATSD=false", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redisAddr,
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=rl", "RUNTIME_WATCH_ROOT=false", "LOG_LEVEL=error",
		"HOST="+host, "GRPC_HOST="+host, "DEBUG_HOST="+host, "GRPC_PORT="+strconv.Itoa(grpcPort),
		"PORT="+strconv.Itoa(port), "DEBUG_PORT="+strconv.Itoa(debugPort),
		"LIMIT_RESPONSE_HEADERS_ENABLED=true", "REDIS_POOL_SIZE=32")
	cmd.Env = append(cmd.Env, env...)
	// Its log (statsd flushes at debug level) goes nowhere; errors show as refusals.
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ref := &refService{addr: net.JoinHostPort(host, strconv.Itoa(grpcPort)), cmd: cmd}
	c := dialRLS(t, ref.addr)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.ShouldRateLimit(context.Background(), &rlspb.RateLimitRequest{Domain: "probe-none", Descriptors: []*rlv3.RateLimitDescriptor{entries("k", "v")}})
		if err == nil {
			return ref
		}
		if time.Now().After(deadline) {
			t.Fatalf("envoyproxy/ratelimit did not answer within 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // waiting for a separate process to start, not for logic
	}
}

// startOurs serves an envoyrls.Service with config on rdb at a loopback
// address, as `flowgate serve -envoy-*` does.
func startOurs(t *testing.T, srv *redistest.Server, config string) string {
	t.Helper()
	cfg, err := envoyrls.Parse(envoyrls.File{Name: "c.yaml", Data: []byte(config)})
	if err != nil {
		t.Fatal(err)
	}
	store := envoyrls.NewRedisStore(srv.Client())
	t.Cleanup(func() { store.Close() })
	svc := envoyrls.NewService(envoyrls.WithStore(store), envoyrls.WithKeyPrefix("fg:"),
		envoyrls.WithResponseHeaders(envoyrls.HeaderNames{}))
	if err := svc.Load(cfg); err != nil {
		t.Fatal(err)
	}
	s := envoyrls.NewServer(svc, "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

func dialRLS(t testing.TB, addr string) rlspb.RateLimitServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return rlspb.NewRateLimitServiceClient(conn)
}

func entries(kv ...string) *rlv3.RateLimitDescriptor {
	d := &rlv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// refConfigs are the reference's example and test configurations that
// load (the others are refusal tests), read from its source tree.
var refConfigs = []string{
	"examples/ratelimit/config/example.yaml", "examples/ratelimit/config/config.yaml",
	"test/config/basic_config.yaml", "test/config/wildcard.yaml", "test/config/share_threshold.yaml",
	"test/config/shadowmode_config.yaml", "test/integration/runtime/current/ratelimit/config/basic.yaml",
	"test/integration/runtime/current/ratelimit/config/another.yaml",
}

// yDesc is the part of a descriptor the request generator reads.
type yDesc struct {
	Key         string  `yaml:"key"`
	Value       string  `yaml:"value"`
	Descriptors []yDesc `yaml:"descriptors"`
}

type yRoot struct {
	Domain      string  `yaml:"domain"`
	Descriptors []yDesc `yaml:"descriptors"`
}

// paths lists every descriptor path of a config as entry lists, with
// values drawn to hit exact values, wildcards and key-only defaults.
func paths(ds []yDesc, prefix [][2]string, rng *rand.Rand, out *[][][2]string) {
	for _, d := range ds {
		for _, v := range valuesFor(d.Value, rng) {
			p := append(append([][2]string(nil), prefix...), [2]string{d.Key, v})
			*out = append(*out, p)
			paths(d.Descriptors, p, rng, out)
		}
	}
}

func valuesFor(v string, rng *rand.Rand) []string {
	switch {
	case v == "":
		return []string{"x" + strconv.Itoa(rng.IntN(3)), "y"}
	case strings.Contains(v, "*"):
		return []string{strings.ReplaceAll(v, "*", strconv.Itoa(rng.IntN(3))), strings.ReplaceAll(v, "*", "")}
	}
	return []string{v}
}

// requests draws n requests over a config's descriptor paths: 1 to 3
// descriptors, unknown entries now and then, hits_addend 0..3 on the
// request and sometimes on a descriptor.
func requests(domain string, ps [][][2]string, n int, rng *rand.Rand) []*rlspb.RateLimitRequest {
	out := make([]*rlspb.RateLimitRequest, n)
	for i := range out {
		req := &rlspb.RateLimitRequest{Domain: domain, HitsAddend: uint32(rng.IntN(4))}
		for range 1 + rng.IntN(3) {
			p := ps[rng.IntN(len(ps))]
			d := &rlv3.RateLimitDescriptor{}
			for _, e := range p {
				d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: e[0], Value: e[1]})
			}
			if rng.IntN(10) == 0 {
				d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: "unknown", Value: "u"})
			}
			if rng.IntN(5) == 0 {
				d.HitsAddend = wrapperspb.UInt64(uint64(rng.IntN(3)))
			}
			req.Descriptors = append(req.Descriptors, d)
		}
		out[i] = req
	}
	return out
}

// clearOfSecondEdge waits, when a second boundary is less than 100ms
// away, until just past it: a pair of calls split by the boundary would
// count one request in two windows, and each service's later answers in
// that window would then differ by its hits. The two services read their
// own clocks; this waits for real time, not for either's logic.
func clearOfSecondEdge() {
	now := time.Now()
	if left := time.Second - time.Duration(now.Nanosecond()); left < 100*time.Millisecond {
		time.Sleep(left + 2*time.Millisecond)
	}
}

// compared counts the statuses of one config's replay.
type compared struct{ total, same, straddled int }

// compareAll sends each request to ref then ours and compares the answers.
func compareAll(t *testing.T, name string, ref, ours rlspb.RateLimitServiceClient, reqs []*rlspb.RateLimitRequest) compared {
	t.Helper()
	var c compared
	diffs := 0
	for i, req := range reqs {
		clearOfSecondEdge()
		sec := time.Now().Unix()
		a, errA := ref.ShouldRateLimit(context.Background(), req)
		b, errB := ours.ShouldRateLimit(context.Background(), req)
		split := time.Now().Unix() != sec
		if errA != nil || errB != nil {
			t.Fatalf("%s request %d: reference %v, ours %v", name, i, errA, errB)
		}
		for j := range a.Statuses {
			c.total++
			sa, sb := statusText(a.Statuses[j]), statusText(b.Statuses[j])
			switch {
			case sa == sb:
				c.same++
			case split:
				c.straddled++
			default:
				if diffs++; diffs <= 5 {
					t.Errorf("%s request %d descriptor %d %v:\n  reference %s\n  ours      %s", name, i, j, req.Descriptors[j].Entries, sa, sb)
				}
			}
		}
		if a.OverallCode != b.OverallCode && !split {
			t.Errorf("%s request %d: overall reference %v, ours %v", name, i, a.OverallCode, b.OverallCode)
		}
		if ha, hb := headersText(a), headersText(b); ha != hb && !split {
			t.Errorf("%s request %d: headers reference %q, ours %q", name, i, ha, hb)
		}
	}
	return c
}

// statusText is what is compared of a descriptor status.
func statusText(st *rlspb.RateLimitResponse_DescriptorStatus) string {
	l := st.GetCurrentLimit()
	return fmt.Sprintf("%v limit=%d/%v/%q remaining=%d", st.GetCode(), l.GetRequestsPerUnit(), l.GetUnit(), l.GetName(), st.GetLimitRemaining())
}

func headersText(r *rlspb.RateLimitResponse) string {
	var b strings.Builder
	for _, h := range r.GetResponseHeadersToAdd() {
		if h.Key != "RateLimit-Reset" { // a second's tick apart at most; compared by the statuses' units
			fmt.Fprintf(&b, "%s=%s ", h.Key, h.Value)
		}
	}
	return b.String()
}

// TestEnvoySideBySide replays the same requests, one at a time, to
// envoyproxy/ratelimit and to ours on one redis-server (each with its own
// key prefix) and compares every descriptor status (code, current limit,
// remaining), the overall code and the RateLimit headers. Pairs are sent
// clear of second boundaries; one that still straddles one (the machine
// stalled) may see two windows of a per-second limit and is counted apart.
func TestEnvoySideBySide(t *testing.T) {
	bin, src := envoyReference(t)
	configs := map[string]string{"flowgate/ours.yaml": ourConfig}
	for _, name := range refConfigs {
		if src == "" {
			break
		}
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		configs[name] = string(b)
	}
	n := 2000
	if s := os.Getenv("FLOWGATE_ENVOY_REQUESTS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	srv := redistest.Start(t)
	var total, same, straddled int
	for name, config := range configs {
		var root yRoot
		if err := yaml.Unmarshal([]byte(config), &root); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rng := rand.New(rand.NewPCG(1, uint64(len(name))))
		var ps [][][2]string
		paths(root.Descriptors, nil, rng, &ps)
		ref := dialRLS(t, startRef(t, bin, srv.Addr, config).addr)
		ours := dialRLS(t, startOurs(t, srv, config))
		c := compareAll(t, name, ref, ours, requests(root.Domain, ps, n, rng))
		total, same, straddled = total+c.total, same+c.same, straddled+c.straddled
	}
	t.Logf("side by side: %d descriptor statuses over %d configs, %d identical (%.2f%%), %d apart across a second boundary",
		total, len(configs), same, 100*float64(same)/float64(max(total, 1)), straddled)
	if float64(same) < 0.995*float64(total) {
		t.Errorf("identical %.2f%%, want >= 99.5%%", 100*float64(same)/float64(total))
	}
}

const benchConfig = `domain: bench
descriptors:
  - key: client
    rate_limit: {unit: minute, requests_per_unit: 4000000000}
`

// loadResult is one closed-loop run: calls answered per second and their
// latency quantiles.
type loadResult struct {
	rps      float64
	p50, p99 time.Duration
}

// drive runs callers concurrent callers for d against c, each request
// holding per descriptors with client values drawn from 1000.
func drive(t *testing.T, c rlspb.RateLimitServiceClient, callers, per int, d time.Duration) loadResult {
	t.Helper()
	lat := make([][]time.Duration, callers)
	errs := make(chan error, callers)
	start := time.Now()
	stop := start.Add(d)
	for g := range callers {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for time.Now().Before(stop) {
				req := &rlspb.RateLimitRequest{Domain: "bench"}
				for range per {
					req.Descriptors = append(req.Descriptors, entries("client", "c"+strconv.Itoa(rng.IntN(1000))))
				}
				t0 := time.Now()
				if _, err := c.ShouldRateLimit(context.Background(), req); err != nil {
					errs <- err
					return
				}
				lat[g] = append(lat[g], time.Since(t0))
			}
			errs <- nil
		}()
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	return loadResult{rps: float64(len(all)) / elapsed.Seconds(), p50: all[len(all)/2], p99: all[len(all)*99/100]}
}

// startServeProcess builds cmd/flowgate and runs `flowgate serve` with
// the Envoy service on config and Redis at redisAddr (and extra flags), as
// its own process like the reference; it returns the process and its
// Envoy service's address.
func startServeProcess(t *testing.T, redisAddr, config string, extra ...string) *refService {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "flowgate")
	build := exec.Command("go", "build", "-o", bin, "./cmd/flowgate")
	build.Dir = ".." // the core module, with its own go.sum
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "-listen", "127.0.0.1:0", "-redis", redisAddr, "-envoy-listen", "127.0.0.1:0",
		"-envoy-config", cfg, "-envoy-key-prefix", "fg:", "-envoy-headers"}
	cmd := exec.Command(bin, append(args, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if a, ok := strings.CutPrefix(lines.Text(), "envoy rate limit service on "); ok {
			go io.Copy(io.Discard, out)
			return &refService{addr: a, cmd: cmd}
		}
	}
	t.Fatal("flowgate serve ended before its Envoy service listened")
	return nil
}

// refWindow is the write-flush window envoyproxy/ratelimit's pipelining
// row runs with (REDIS_PIPELINE_WINDOW; its README suggests 150us-500us).
const refWindow = "150us"

// TestEnvoyThroughput measures both services on one redis-server with 32
// concurrent callers over 1000 descriptor values, 1 and 5 descriptors per
// request, then with one caller (FLOWGATE_ENVOY_BENCH_DURATION per run,
// default 3s). Each service runs two ways: theirs as it ships and with its
// implicit pipelining on (REDIS_PIPELINE_WINDOW), ours as serve runs by
// default (concurrent requests sharing pipelines) and with one pipeline
// per request (-envoy-redis-pipelines 0), as theirs ships.
func TestEnvoyThroughput(t *testing.T) {
	bin, _ := envoyReference(t)
	d := 3 * time.Second
	if s := os.Getenv("FLOWGATE_ENVOY_BENCH_DURATION"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	srv := redistest.Start(t)
	services := []struct {
		name string
		p    *refService
	}{
		{"envoyproxy/ratelimit", startRef(t, bin, srv.Addr, benchConfig)},
		{"envoyproxy/ratelimit window " + refWindow, startRef(t, bin, srv.Addr, benchConfig, "REDIS_PIPELINE_WINDOW="+refWindow)},
		{"flowgate", startServeProcess(t, srv.Addr, benchConfig)},
		{"flowgate unbatched", startServeProcess(t, srv.Addr, benchConfig, "-envoy-redis-pipelines", "0")},
	}
	for _, run := range []struct{ callers, per int }{{32, 1}, {32, 5}, {1, 1}} {
		var base, baseCPU float64
		for _, sv := range services {
			c := dialRLS(t, sv.p.addr)
			drive(t, c, run.callers, run.per, d/10) // warm up: connections, pools
			cpu0 := sv.p.cpu()
			r := drive(t, c, run.callers, run.per, d)
			// The service's own CPU time per answered request: what it
			// costs whoever runs it, apart from the load generator that
			// shares this machine's cores with it.
			perReq := float64(sv.p.cpu()-cpu0) / (r.rps * d.Seconds()) / 1e3
			if base == 0 {
				base, baseCPU = r.rps, perReq
			}
			t.Logf("%d caller(s), %d descriptor(s)/request: %s %.0f req/s p50 %v p99 %v (%.2fx envoyproxy/ratelimit as shipped); service CPU %.1f µs/request (%.2fx fewer)",
				run.callers, run.per, sv.name, r.rps, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.rps/base, perReq, baseCPU/perReq)
		}
	}
}
