// Command demo shows flowgate guarding a small HTTP shop under realistic load,
// live, in about 20 seconds, with nothing to install: no Redis, no setup.
//
//	go run ./examples/demo                 # or: make demo
//	go run ./examples/demo -duration 8s    # a shorter run
//	go run ./examples/demo -plain          # no escape codes (automatic when not a terminal)
//	go run ./examples/demo -addr 127.0.0.1:9464 -duration 3m   # a fixed port for Prometheus
//
// It starts the shop on a loopback port behind flowgate's net/http
// middleware, with the rules of examples/demo/rules.json (copied to a
// temporary directory and hot-reloaded from there): a global, a per-user and
// a per-IP limit on the product list, a leaky-bucket queue on orders, and a
// warm-up limit on recommendations, a circuit breaker on shipping. It then sends real HTTP requests at it:
// a crowd of well-behaved users, a power user over the per-user limit, an
// abusive client hammering from one IP, a flash-sale spike over the global
// limit, a cold start on the warm-up resource, and an outage of the shipping
// carrier that opens the breaker until it recovers. Each second it shows what
// passed, waited and was refused at which level, the warm-up ramp, the
// rejection ratio and the alert. Halfway it edits the rules file and the
// watcher applies the change; /metrics is served throughout and scraped at
// the end, and the live console (package admin) at /flowgate/.
package main

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/metrics"
	"github.com/flowgate/flowgate/rules"
)

//go:embed rules.json
var rulesJSON []byte

// The hot reload halfway raises the power user's per-user limit: support
// found out u-4711 is a paying customer.
const (
	reloadRule  = "products-per-user"
	reloadLimit = 15.0
	reloadBurst = 30.0
)

type config struct {
	duration time.Duration
	addr     string // where the shop and /metrics listen
	plain    bool   // no escape codes: one block every other second
	width    int    // the terminal's columns for the intro; 0: as it is
	out      io.Writer
	workers  int // concurrent requests at most
}

func main() {
	duration := flag.Duration("duration", 20*time.Second, "how long to drive load")
	addr := flag.String("addr", "127.0.0.1:0", "listen address of the shop and its /metrics (port 0: any free port)")
	plain := flag.Bool("plain", false, "no escape codes (the default when stdout is not a terminal)")
	flag.Parse()
	if *duration <= 0 {
		fmt.Fprintln(os.Stderr, "demo: -duration must be > 0")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := config{
		duration: *duration,
		addr:     *addr,
		plain:    *plain || !isTerminal(os.Stdout) || os.Getenv("TERM") == "dumb",
		out:      os.Stdout,
		workers:  64,
	}
	if !cfg.plain {
		cfg.width, _ = termSize(os.Stdout)
	}
	if _, err := run(ctx, stop, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// run is the whole demo; it returns what happened, for the test.
func run(ctx context.Context, stop func(), cfg config) (*monitor, error) {
	path, cleanup, err := copyRules(rulesJSON)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	var mon *monitor // the breaker listener needs it; built just below
	eng := flow.NewEngine(flow.WithBreakerListener(func(ev flow.BreakerEvent) { mon.onBreaker(ev) }))
	sc := newScenario()
	mon = newMonitor(eng, sc, cfg.duration)
	ctrls, err := watchedControls(ctx, eng, path, mon)
	if err != nil {
		return nil, err
	}
	defer ctrls.Close()
	defer mon.watcher.Close()
	al := ctrls.al

	base, token, shutdown, err := serveShop(cfg.addr, eng, sc, mon)
	if err != nil {
		return nil, err
	}
	defer shutdown()
	mon.metricsURL = base + "/metrics"
	intro := &fitWriter{out: cfg.out, width: cfg.width}
	fmt.Fprintf(intro, "flowgate demo: a shop on %s guarded by flowhttp, %s of real traffic over loopback\n", base, cfg.duration)
	fmt.Fprintf(intro, "rules:   %s (a copy of examples/demo/rules.json, watched), version %s\n", path, short(mon.watcher.Status().Version))
	fmt.Fprintf(intro, "metrics: %s (try: curl -s %s | grep flowgate_requests)\n", mon.metricsURL, mon.metricsURL)
	fmt.Fprintf(intro, "console: %s/flowgate/ (live; token for its reset form: %s)\n", base, token)
	printIntro(intro, eng.Rules(), cfg.duration)

	ctrls.Start()
	client := newClient(cfg.workers)
	defer client.CloseIdleConnections()
	start := time.Now()
	mon.mu.Lock() // the watcher's and alerter's callbacks read it
	mon.start = start
	mon.mu.Unlock()
	l := &load{sc: sc, base: base, client: client, workers: cfg.workers, start: start, d: cfg.duration}
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.run(ctx)
	}()
	showLive(cfg, mon, path, done)
	stop() // a second Ctrl-C now ends the program at once

	// Scrape while the alerter still runs, so a firing alert shows.
	scraped, err := scrape(client, mon.metricsURL)
	if err != nil {
		fmt.Fprintln(cfg.out, "scrape:", err)
	}
	if err := al.Close(); err != nil && !errors.Is(err, alerting.ErrClosed) {
		return nil, err
	}
	printSummary(cfg.out, mon, mon.sample(false), scraped)
	return mon, nil
}

// watchedControls loads the rules file at path into eng and watches it,
// with the adaptive controller and the alerter that take their settings
// from its "adaptive" and "alerting" sections and follow them on reload.
// It hands the alerter and the watcher to mon; the caller closes both
// (the controls, and mon.watcher).
func watchedControls(ctx context.Context, eng *flow.Engine, path string, mon *monitor) (*controls, error) {
	doc, err := rules.LoadFile(path)
	if err != nil {
		return nil, err
	}
	ctrls, err := newControls(eng, doc, nil, []alerting.Option{
		alerting.WithOverall(false), // one alert per resource tells the story better
		alerting.WithSink(alerting.SinkFunc(func(_ context.Context, a alerting.Alert) error {
			mon.onAlert(a)
			return nil
		})),
	})
	if err != nil {
		return nil, err
	}
	mon.alerter = ctrls.al
	w, err := rules.Watch(ctx, path, eng, rules.WithOnReload(func(ev rules.Event) {
		mon.onReload(ev)
		if err := ctrls.onReload(ev); err != nil {
			mon.noteError("applying the adaptive and alerting sections", err)
		}
	}))
	if err != nil {
		ctrls.Close()
		return nil, err
	}
	mon.watcher = w
	return ctrls, nil
}

// serveShop serves the shop behind eng on addr (any free loopback port
// when empty), with /metrics, and the admin API and live console under
// /flowgate/, unguarded but for writes (the console's reset-a-key form),
// which take the token it returns, made for this run. shutdown stops the
// server.
func serveShop(addr string, eng *flow.Engine, sc *scenario, mon *monitor) (base, token string, shutdown func(), err error) {
	w := mon.watcher
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.NewCollector(eng,
		metrics.WithAlerts(mon.alerter),
		metrics.WithReload(metrics.ReloadFunc(func() metrics.ReloadStatus {
			st := w.Status()
			return metrics.ReloadStatus{Successful: st.OK, LastSuccess: st.LastGoodLoad}
		})),
	)); err != nil {
		return "", "", nil, err
	}
	shop, err := newService(eng, reg, sc)
	if err != nil {
		return "", "", nil, err
	}
	token = rand.Text()
	h := http.NewServeMux()
	h.Handle("/flowgate/", http.StripPrefix("/flowgate", admin.New(eng, admin.WithSource(w), admin.WithWriteToken(token))))
	h.Handle("/", shop)
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	shutdown = func() {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		<-served
	}
	return "http://" + ln.Addr().String(), token, shutdown, nil
}

// showLive draws the table every second until done is closed (a full
// table every other second), and edits the rules file at path once,
// reloadAt into the run.
func showLive(cfg config, mon *monitor, path string, done <-chan struct{}) {
	scr := newScreen(cfg.out, cfg.plain)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	edit := time.NewTimer(time.Duration(reloadAt * float64(cfg.duration)))
	defer edit.Stop()
	var lastFull time.Time // when the whole table was last drawn
loop:
	for n := 1; ; n++ {
		select {
		case <-done:
			break loop
		case <-edit.C:
			mon.edit(path)
			n--
			continue
		case <-tick.C:
		}
		full := n%2 == 0
		scr.frame(mon.sample(true), full)
		if full || !cfg.plain {
			lastFull = time.Now()
		}
	}
	// The load is over: show the last counts, unless the table just did
	// (a frame of a few milliseconds would show rates of nothing).
	if time.Since(lastFull) > 500*time.Millisecond {
		scr.frame(mon.sample(false), true)
	}
	scr.end()
}
