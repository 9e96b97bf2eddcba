package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/cluster/tokenrpc"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/metrics"
	"github.com/flowgate/flowgate/rules"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

const serveUsage = "serve [flags]      run the cluster token service (gRPC) over Redis; -h lists the flags"

var serveCommand = command{
	name:  "serve",
	usage: serveUsage,
	run:   runServe,
}

// runServe serves until SIGINT or SIGTERM, then drains the calls in flight.
func runServe(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveUntil(ctx, args, stdout, stderr)
}

// serveUntil is serve until ctx ends: tests cancel ctx instead of sending a
// signal. It prints "listening on ADDR" (and "metrics on ADDR") once ready.
func serveUntil(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf, err := parseServeFlags(args, fs)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "flowgate serve: %v\n", err)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	// go-redis's own lines ("failed to dial" per attempt) go through our
	// logger at Debug: the token server logs each node's outage once.
	redis.SetLogger(cluster.RedisLogger(log, slog.LevelDebug))
	if err := serve(ctx, cf, stdout, log); err != nil {
		fmt.Fprintf(stderr, "flowgate serve: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

func serve(ctx context.Context, cf serveConfig, stdout io.Writer, log *slog.Logger) error {
	opts, err := serverOptions(cf, log)
	if err != nil {
		return err
	}
	rdb, err := redisClient(cf.Redis, time.Duration(cf.Timeout))
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer rdb.Close()
	ts, err := cluster.NewRedisTokenServer(rdb, cluster.WithTimeout(time.Duration(cf.Timeout)), cluster.WithPrefix(cf.Prefix), cluster.WithLogger(log))
	if err != nil {
		return err
	}
	defer ts.Close()
	envoy, err := startEnvoy(cf, rdb, ts, stdout, log)
	if err != nil {
		return err
	}
	defer envoy.stop(time.Duration(cf.ShutdownTimeout))
	var watched *watchedRules
	var alerts atomic.Pointer[serveAlerts] // set once the server exists
	if cf.Rules != "" {
		watched, err = watchRules(ctx, cf.Rules, log, func(d *rules.Document) {
			if sa := alerts.Load(); sa != nil {
				sa.apply(d)
			}
		})
		if err != nil {
			return fmt.Errorf("rules: %w", err)
		}
		defer watched.w.Close()
	}
	srv, err := tokenrpc.NewServer(ts, watched.lookup(), opts...)
	if err != nil {
		return err
	}
	if watched != nil {
		sa, err := startServeAlerts(watched.w, srv, &alerts, log)
		if err != nil {
			return fmt.Errorf("alerting: %w", err)
		}
		defer sa.Close()
	}
	lis, err := net.Listen("tcp", cf.Listen)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	fmt.Fprintf(stdout, "listening on %s\n", lis.Addr())
	hs, err := serveMetrics(cf, srv, ts, watched, envoy, stdout, log)
	if err != nil {
		srv.Stop()
		<-served
		return err
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("flowgate serve: shutting down, draining calls in flight")
	return drain(srv, served, hs, time.Duration(cf.ShutdownTimeout))
}

// drain shuts srv down, letting the calls in flight finish for up to
// timeout, waits for its Serve to return on served, and shuts hs (when
// not nil) down within the same time.
func drain(srv *tokenrpc.Server, served <-chan error, hs *http.Server, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := srv.Shutdown(ctx)
	<-served
	if hs != nil {
		err = errors.Join(err, hs.Shutdown(ctx))
	}
	return err
}

// serverOptions are the token server's options from cf: its request cap,
// logger, inline rules, and the token and TLS that guard it. It refuses,
// or logs a warning, when cf.exposure finds the service, or
// checkAdminExposure the admin reads, open to others unguarded.
func serverOptions(cf serveConfig, log *slog.Logger) ([]tokenrpc.Option, error) {
	token, err := readSecret(cf.TokenFile, cf.TokenEnv)
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	warning, err := cf.exposure(token != "")
	if err != nil {
		return nil, err
	}
	if warning != "" {
		log.Warn("flowgate serve: " + warning)
	}
	if err := checkAdminExposure(cf, log); err != nil {
		return nil, err
	}
	opts := []tokenrpc.Option{tokenrpc.WithMaxQPS(cf.MaxQPS), tokenrpc.WithLogger(log), tokenrpc.WithInlineRules(*cf.InlineRules)}
	if token != "" {
		opts = append(opts, tokenrpc.WithAuthToken(token))
	}
	if cf.TLS.Cert != "" {
		tc, err := serverTLS(cf.TLS)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		opts = append(opts, tokenrpc.WithTLS(tc))
	}
	return opts, nil
}

// startServeAlerts starts the alerts of the watched document on srv's
// statistics and publishes them in alerts, where the watcher's reloads
// find them; a document reloaded before they were published is applied
// here. The caller closes them.
func startServeAlerts(w *rules.Watcher, srv *tokenrpc.Server, alerts *atomic.Pointer[serveAlerts], log *slog.Logger) (*serveAlerts, error) {
	first := w.Document()
	sa, err := newServeAlerts(first, srv.Snapshot, clock.Real(), log)
	if err != nil {
		return nil, err
	}
	alerts.Store(sa)
	if d := w.Document(); d != first { // reloaded meanwhile
		sa.apply(d)
	}
	sa.Start()
	return sa, nil
}

// serveMetrics serves /metrics and the admin console on cf.MetricsListen,
// or nothing (a nil server) when it is empty.
func serveMetrics(cf serveConfig, srv *tokenrpc.Server, ts *cluster.RedisTokenServer, watched *watchedRules, envoy *envoyService, stdout io.Writer, log *slog.Logger) (*http.Server, error) {
	if cf.MetricsListen == "" {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(append([]prometheus.Collector{srv.Collector(), metrics.NewClusterCollector(ts)}, envoy.collectors()...)...)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if !cf.NoAdmin {
		if err := mountAdmin(mux, cf, watched, srv.Snapshot, envoy.adminDomains(), log); err != nil {
			return nil, fmt.Errorf("admin: %w", err)
		}
	}
	ml, err := net.Listen("tcp", cf.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ml)
	fmt.Fprintf(stdout, "metrics on %s\n", ml.Addr())
	if !cf.NoAdmin {
		fmt.Fprintf(stdout, "admin on http://%s/flowgate/\n", ml.Addr())
	}
	return hs, nil
}

// watchedRules is the served rules document: an id -> rule map for
// tokenrpc, and the watcher and engine holding it, for the admin API.
type watchedRules struct {
	byID *atomic.Pointer[map[string]*flow.Rule]
	w    *rules.Watcher
	eng  *flow.Engine
}

// watchRules keeps an id -> rule map in step with the rules document. The
// pointers stay the same until the document changes, as tokenrpc needs. The
// watcher hands the validated rules to the map and to an engine that only
// holds them, for the admin API (no call is ever decided by it). onChange
// sees each document loaded (the first one too, from Watch itself), right
// after its rules.
func watchRules(ctx context.Context, path string, log *slog.Logger, onChange func(*rules.Document)) (*watchedRules, error) {
	var doc atomic.Pointer[map[string]*flow.Rule]
	holder := flow.NewEngine()
	publish := rules.LoaderFunc(func(rs []flow.Rule) error {
		if err := holder.LoadRules(rs); err != nil {
			return err
		}
		m := make(map[string]*flow.Rule, len(rs))
		for i := range rs {
			r := rs[i].WithDefaults()
			m[r.ID] = &r
		}
		doc.Store(&m)
		return nil
	})
	w, err := rules.Watch(ctx, path, publish, rules.WithLogger(log), rules.WithOnReload(func(ev rules.Event) {
		if ev.Err == nil && ev.Changed {
			if ev.Doc != nil {
				onChange(ev.Doc)
			}
			log.Info("flowgate serve: rules reloaded", slog.String("version", ev.Version))
		}
	}))
	if err != nil {
		return nil, err
	}
	return &watchedRules{byID: &doc, w: w, eng: holder}, nil
}

// lookup returns the rule of the document in force with an id, for
// tokenrpc.NewServer; nil (no document: rules come inline) when wr is nil.
func (wr *watchedRules) lookup() func(id string) (*flow.Rule, bool) {
	if wr == nil {
		return nil
	}
	return func(id string) (*flow.Rule, bool) { r, ok := (*wr.byID.Load())[id]; return r, ok }
}

func serverTLS(tc tlsConfig) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(tc.Cert, tc.Key)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if tc.ClientCA != "" {
		pem, err := os.ReadFile(tc.ClientCA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate", tc.ClientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// readSecret returns the first line of file, or else the value of env.
func readSecret(file, env string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		s, _, _ := strings.Cut(string(b), "\n")
		if s = strings.TrimSpace(s); s == "" {
			return "", fmt.Errorf("%s: empty", file)
		}
		return s, nil
	}
	if env != "" {
		if s := os.Getenv(env); s != "" {
			return s, nil
		}
		return "", fmt.Errorf("$%s: empty or unset", env)
	}
	return "", nil
}
