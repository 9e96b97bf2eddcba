package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/cluster/remote"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

const serveRules = `{"rules": [{"id": "orders", "resource": "GET /orders", "algorithm": "fixed_window",
  "limit": 3, "window": "1h", "cluster": {"threshold": "global", "fallback": "deny"}}],
  "alerting": {"rejectionRatio": 0.3, "minRequests": 1}}`

// TestServe runs `flowgate serve` in-process on Redis with a rules
// document and a token: a client naming the rule by id gets the served
// limit, a change to the document (rules and alerting section) applies,
// /metrics counts the calls, and cancelling drains and exits 0.
func TestServe(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	rulesPath := filepath.Join(dir, "rules.json")
	tokenPath := filepath.Join(dir, "token")
	for p, s := range map[string]string{rulesPath: serveRules, tokenPath: "s3cret\n"} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	sv := startServe(t, ctx, "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0", "-redis", srv.Addr,
		"-rules", rulesPath, "-token-file", tokenPath, "-timeout", "1s")
	addr, metricsAddr, code, stderr := sv.addr, sv.metricsAddr, sv.code, sv.stderr

	c, err := remote.New([]string{addr}, remote.WithToken("s3cret"), remote.WithRuleIDs(true), remote.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The engine's copy says 100; the served document's rule (3) decides.
	e := flow.NewEngine(flow.WithTokenServer(c))
	if err := e.LoadRules([]flow.Rule{{ID: "orders", Resource: "GET /orders", Algorithm: flow.AlgoFixedWindow, Limit: 100,
		Window: time.Hour, Cluster: &flow.ClusterSpec{Fallback: "allow"}}}); err != nil {
		t.Fatal(err)
	}
	passed := 0
	for range 5 {
		if p, err := e.Entry("GET /orders"); err == nil {
			passed++
			p.Exit()
		}
	}
	if passed != 3 {
		t.Fatalf("passed %d of 5, want the served limit 3 (stats %+v)", passed, c.Stats())
	}
	// Hot reload: the served limit goes up to 5; the document's change,
	// not the client's copy, lets more through.
	// The alerting section changes with it.
	reloaded := strings.NewReplacer(`"limit": 3`, `"limit": 5`, `"rejectionRatio": 0.3`, `"rejectionRatio": 0.9`).Replace(serveRules)
	if err := os.WriteFile(rulesPath, []byte(reloaded), 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		p, err := e.Entry("GET /orders")
		if err == nil {
			p.Exit()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reloaded limit never applied: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // waiting for the file watcher
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`flowgate_token_server_requests_total{method="acquire",status="ok"} 4`,
		`flowgate_token_server_requests_total{method="acquire",status="blocked"}`, "flowgate_cluster_breaker_open 0"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The admin API beside /metrics shows the served document and its
	// file; it is read-only without -admin-token-env.
	resp, err = http.Get("http://" + metricsAddr + "/flowgate/api/rules")
	if err != nil {
		t.Fatal(err)
	}
	var rr admin.RulesResponse
	if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if rr.Origin != "source" || rr.Source == nil || !rr.Source.OK || rr.Source.Path != rulesPath || rr.Version != rr.Source.Version {
		t.Errorf("admin rules: origin %q source %+v version %s", rr.Origin, rr.Source, rr.Version)
	}
	req, _ := http.NewRequest("PUT", "http://"+metricsAddr+"/flowgate/api/rules", strings.NewReader(serveRules))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("admin PUT without -admin-token-env: %v %v, want 403", resp.Status, err)
	} else {
		resp.Body.Close()
	}
	cancel()
	if got := <-code; got != exitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", got, stderr.String())
	}
	if strings.Contains(stderr.String(), "s3cret") {
		t.Fatalf("the token was logged:\n%s", stderr.String())
	}
	// The alerter took the document's section at start and on the reload
	// (applied by the watcher's goroutine, which serve's exit waits for).
	for _, want := range []string{`alerting section applied" rejectionRatio=0.3 `, `alerting section applied" rejectionRatio=0.9 `} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, stderr.String())
		}
	}
}

// servingT is a `flowgate serve` running in-process (startServe).
type servingT struct {
	addr, metricsAddr string   // metricsAddr only with -metrics-listen
	code              chan int // serve's exit code, once its ctx ends
	stderr            *syncBuilder
}

// startServe runs serve with args until ctx ends, and returns once it
// prints its addresses (the metrics one too when args ask for it).
func startServe(t *testing.T, ctx context.Context, args ...string) *servingT {
	t.Helper()
	out, w := io.Pipe()
	sv := &servingT{code: make(chan int, 1), stderr: new(syncBuilder)}
	go func() {
		sv.code <- serveUntil(ctx, args, w, sv.stderr)
		w.Close()
	}()
	wantMetrics := slices.Contains(args, "-metrics-listen")
	lines := bufio.NewScanner(out)
	for sv.addr == "" || (wantMetrics && sv.metricsAddr == "") {
		if !lines.Scan() {
			t.Fatalf("serve ended before it listened: %s", sv.stderr.String())
		}
		if a, ok := strings.CutPrefix(lines.Text(), "listening on "); ok {
			sv.addr = a
		}
		if a, ok := strings.CutPrefix(lines.Text(), "metrics on "); ok {
			sv.metricsAddr = a
		}
	}
	go io.Copy(io.Discard, out)
	return sv
}

// syncBuilder is a strings.Builder serve's logger may write while the
// test reads it.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "serve.json")
	os.WriteFile(path, []byte(`{"listen": ":9000", "redis": {"addrs": ["a:1", "b:2"]}, "maxQps": 50, "timeout": "30ms"}`), 0o600)
	cf, err := parseServeFlags([]string{"-config", path, "-max-qps", "70"}, flag.NewFlagSet("serve", flag.ContinueOnError))
	if err != nil {
		t.Fatal(err)
	}
	if cf.Listen != ":9000" || cf.MaxQPS != 70 || time.Duration(cf.Timeout) != 30*time.Millisecond || len(cf.Redis.Addrs) != 2 || !*cf.InlineRules {
		t.Fatalf("config %+v: want the file's listen, addrs and timeout, and the flag's max-qps 70", cf)
	}
	os.WriteFile(path, []byte(`{"listn": ":9000"}`), 0o600)
	if _, err := parseServeFlags([]string{"-config", path}, flag.NewFlagSet("serve", flag.ContinueOnError)); err == nil || !strings.Contains(err.Error(), "listn") {
		t.Fatalf("unknown field: %v, want an error naming it", err)
	}
	var stderr strings.Builder
	if got := serveUntil(context.Background(), []string{"-tls-cert", "x.pem"}, io.Discard, &stderr); got != exitUsage ||
		!strings.Contains(stderr.String(), "cert and key go together") {
		t.Fatalf("cert without key: exit %d, %q", got, stderr.String())
	}
}

// TestServeFlagsOverrideFile: every flag given on the command line wins
// over the -config file, and the file wins over the defaults.
func TestServeFlagsOverrideFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.json")
	file := `{"listen": "f:1", "metricsListen": "f:2", "rules": "f.json",
		"redis": {"addrs": ["f:3"], "masterName": "fm", "db": 1, "username": "fu", "passwordEnv": "FP"},
		"tls": {"cert": "f.pem", "key": "f.key", "clientCA": "f.ca"}, "tokenFile": "f.tok", "tokenEnv": "FT",
		"maxQps": 1, "timeout": "1s", "shutdownTimeout": "2s", "prefix": "f:", "inlineRules": false,
		"adminTokenEnv": "FA", "envoy": {"pipelines": 1}}`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, err := parseServeFlags([]string{"-config", path}, flag.NewFlagSet("serve", flag.ContinueOnError))
	if err != nil {
		t.Fatal(err)
	}
	inlineOff := false
	want := serveConfig{Listen: "f:1", MetricsListen: "f:2", Rules: "f.json",
		Redis: redisConfig{Addrs: []string{"f:3"}, MasterName: "fm", DB: 1, Username: "fu", PasswordEnv: "FP"},
		TLS:   tlsConfig{Cert: "f.pem", Key: "f.key", ClientCA: "f.ca"}, TokenFile: "f.tok", TokenEnv: "FT",
		MaxQPS: 1, Timeout: duration(time.Second), ShutdownTimeout: duration(2 * time.Second), Prefix: "f:",
		InlineRules: &inlineOff, AdminTokenEnv: "FA", Envoy: envoyConfig{Pipelines: 1, MaxBatch: 1024}}
	if !reflect.DeepEqual(fromFile, want) {
		t.Fatalf("from the file:\n got %+v\nwant %+v", fromFile, want)
	}
	args := []string{"-config", path, "-listen", "c:1", "-metrics-listen", "c:2", "-rules", "c.json",
		"-redis", "c:3,c:4", "-redis-master", "cm", "-redis-cluster", "-redis-db", "2", "-redis-user", "cu",
		"-redis-password-env", "CP", "-redis-tls", "-tls-cert", "c.pem", "-tls-key", "c.key", "-tls-client-ca", "c.ca",
		"-token-file", "c.tok", "-token-env", "CT", "-max-qps", "3", "-timeout", "3s", "-shutdown-timeout", "4s",
		"-prefix", "c:", "-inline-rules=true", "-admin-token-env", "CA", "-allow-unauthenticated",
		"-admin-read-token-env", "CR", "-allow-cleartext-token", "-allow-open-admin-reads", "-envoy-redis-pipelines", "0", "-envoy-redis-max-batch", "64"}
	got, err := parseServeFlags(args, flag.NewFlagSet("serve", flag.ContinueOnError))
	if err != nil {
		t.Fatal(err)
	}
	inlineOn := true
	want = serveConfig{Listen: "c:1", MetricsListen: "c:2", Rules: "c.json",
		Redis: redisConfig{Addrs: []string{"c:3", "c:4"}, MasterName: "cm", Cluster: true, DB: 2, Username: "cu", PasswordEnv: "CP", TLS: true},
		TLS:   tlsConfig{Cert: "c.pem", Key: "c.key", ClientCA: "c.ca"}, TokenFile: "c.tok", TokenEnv: "CT",
		MaxQPS: 3, Timeout: duration(3 * time.Second), ShutdownTimeout: duration(4 * time.Second), Prefix: "c:",
		InlineRules: &inlineOn, AdminTokenEnv: "CA", AllowUnauthenticated: true,
		AdminReadTokenEnv: "CR", AllowCleartextToken: true, AllowOpenAdminReads: true, Envoy: envoyConfig{Pipelines: 0, MaxBatch: 64}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("flags over the file:\n got %+v\nwant %+v", got, want)
	}
	// -no-admin leaves the admin tokens nothing to guard.
	if _, err := parseServeFlags([]string{"-config", path, "-no-admin"}, flag.NewFlagSet("serve", flag.ContinueOnError)); err == nil || !strings.Contains(err.Error(), "noAdmin") {
		t.Errorf("-no-admin with the file's adminTokenEnv: %v, want a noAdmin error", err)
	}
	got, err = parseServeFlags([]string{"-config", path, "-no-admin", "-admin-token-env", ""}, flag.NewFlagSet("serve", flag.ContinueOnError))
	if err != nil || !got.NoAdmin {
		t.Errorf("-no-admin: %+v, %v", got, err)
	}
}

// TestServeRedisClientNeverResends: the client serve builds never re-sends
// a command (a decision may have counted) and dials once per call.
func TestServeRedisClientNeverResends(t *testing.T) {
	for _, rc := range []redisConfig{{Addrs: []string{"127.0.0.1:1"}}, {Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}}} {
		rdb, err := redisClient(rc, 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		var retries, dials int
		var ctxTimeout bool
		switch c := rdb.(type) {
		case *redis.Client:
			o := c.Options()
			retries, dials, ctxTimeout = o.MaxRetries, o.DialerRetries, o.ContextTimeoutEnabled
		case *redis.ClusterClient:
			o := c.Options()
			retries, dials, ctxTimeout = o.MaxRetries, o.DialerRetries, o.ContextTimeoutEnabled
		default:
			t.Fatalf("%v: got %T", rc.Addrs, rdb)
		}
		// go-redis normalises MaxRetries -1 (none) to 0 and 0 (default) to 3.
		if retries > 0 || dials != 1 || !ctxTimeout {
			t.Errorf("%v: MaxRetries %d, DialerRetries %d, ContextTimeoutEnabled %v; want none, 1, true", rc.Addrs, retries, dials, ctxTimeout)
		}
		rdb.Close()
	}
}

// serve listens on loopback unless told otherwise, and refuses to listen
// beyond it with nobody authenticated unless -allow-unauthenticated says so.
func TestServeListenDefaultsAndExposure(t *testing.T) {
	cf, err := parseServeFlags(nil, flag.NewFlagSet("serve", flag.ContinueOnError))
	if err != nil {
		t.Fatal(err)
	}
	if cf.Listen != "127.0.0.1:7600" {
		t.Errorf("default listen %q, want 127.0.0.1:7600", cf.Listen)
	}
	for _, tc := range []struct {
		listen, clientCA string
		token, allow     bool
		wantErr, warn    bool
	}{
		{listen: "127.0.0.1:7600"},
		{listen: "[::1]:7600"},
		{listen: "localhost:7600"},
		{listen: ":7600", wantErr: true},
		{listen: "0.0.0.0:7600", wantErr: true},
		{listen: "[::]:7600", wantErr: true},
		{listen: "10.1.2.3:7600", wantErr: true},
		{listen: "tokens.internal:7600", wantErr: true},
		{listen: ":7600", token: true, wantErr: true}, // a token in clear: see TestServeRefusesCleartextToken
		{listen: ":7600", clientCA: "ca.pem"},
		{listen: ":7600", allow: true, warn: true},
	} {
		c := serveConfig{Listen: tc.listen, AllowUnauthenticated: tc.allow, TLS: tlsConfig{ClientCA: tc.clientCA}}
		warning, err := c.exposure(tc.token)
		if (err != nil) != tc.wantErr || (warning != "") != tc.warn {
			t.Errorf("%+v: warning %q, err %v", tc, warning, err)
		}
	}

	// End to end: refused before anything listens or dials Redis.
	var stdout, stderr strings.Builder
	code := serveUntil(context.Background(), []string{"-listen", "0.0.0.0:0"}, &stdout, &stderr)
	if code != exitInvalid || !strings.Contains(stderr.String(), "beyond loopback") || !strings.Contains(stderr.String(), "-allow-unauthenticated") {
		t.Errorf("open listen without auth: exit %d, stderr %q", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("refused serve printed %q", stdout.String())
	}
}
