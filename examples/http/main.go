// Command http is a small order service guarded by flowgate's net/http
// middleware: a global limit per route, a per-user limit (header X-User) and
// a per-client-IP limit, with 429 answers carrying Retry-After, RateLimit
// headers and a problem body.
//
//	go run ./examples/http                 # serve on 127.0.0.1:8080 until Ctrl-C
//	go run ./examples/http -selftest       # drive requests at itself, print, exit
//	go run ./examples/http -serve > log    # serve, with stdout redirected
//
// When stdout is not a terminal (CI, a pipe, a file) the program self-tests
// by default, so it always ends within a few seconds, and says so on stderr;
// -serve makes it serve all the same. -duration bounds the serving mode.
//
// Try, while it serves:
//
//	for i in 1 2 3 4 5 6 7; do curl -si -H 'X-User: ann' localhost:8080/orders/$i | head -1; done
//	curl -si -H 'X-User: ann' localhost:8080/orders/8
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"golang.org/x/term"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/flow/flowhttp"
)

// rules are the service's limits. Each route has a global limit; the order
// reads also have a per-user and a per-IP limit.
func rules() []flow.Rule {
	return []flow.Rule{
		{ID: "orders-read", Resource: "GET /orders/{id}", Algorithm: flow.AlgoTokenBucket,
			Limit: 200, Window: time.Second, Burst: 50},
		{ID: "orders-read-per-user", Resource: "GET /orders/{id}", Level: flow.LevelUser,
			Algorithm: flow.AlgoFixedWindow, Limit: 5, Window: time.Second},
		{ID: "orders-read-per-ip", Resource: "GET /orders/{id}", Level: flow.LevelIP,
			Algorithm: flow.AlgoSlidingWindow, Limit: 50, Window: time.Second},
		// Writes queue rather than fail: one every 200ms, waiting up to 1s.
		{ID: "orders-write", Resource: "POST /orders", Algorithm: flow.AlgoLeakyBucket,
			Limit: 5, Window: time.Second, MaxWait: time.Second},
		{ID: "search-per-ip", Resource: "GET /search", Level: flow.LevelIP,
			Algorithm: flow.AlgoSlidingLog, Limit: 3, Window: 10 * time.Second},
	}
}

// newService builds the routes on a guarded ServeMux. trusted lists the
// proxies whose forwarding headers are believed (none by default).
func newService(eng *flow.Engine, trusted []string) (http.Handler, error) {
	proxies, err := flowhttp.ParseTrustedProxies(trusted...)
	if err != nil {
		return nil, err
	}
	mux := flowhttp.NewServeMux(eng,
		flowhttp.WithUser(func(r *http.Request) string { return r.Header.Get("X-User") }),
		flowhttp.WithTrustedProxies(proxies...),
		flowhttp.WithQuotaHeaders(true),
	)
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"id\":%q,\"status\":\"shipped\"}\n", r.PathValue("id"))
	})
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "created\n")
	})
	mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "[]\n")
	})
	// Not guarded: the health check must answer even when clients are limited.
	mux.ServeMux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address (self-test: a free loopback port)")
	selftest := flag.Bool("selftest", false, "drive requests at the service over loopback, print the outcome and exit")
	serveFlag := flag.Bool("serve", false, "serve even when stdout is not a terminal (default there: -selftest)")
	duration := flag.Duration("duration", 0, "serve this long, then exit (0: until interrupted)")
	var trusted stringList
	flag.Var(&trusted, "trust", "trusted proxy CIDR whose X-Forwarded-For is believed (repeatable)")
	flag.Parse()

	self, why := selfTesting(*selftest, *serveFlag, term.IsTerminal(int(os.Stdout.Fd())))
	if why != "" {
		fmt.Fprintln(os.Stderr, "http example:", why)
	}
	if self {
		if err := runSelfTest(os.Stdout, trusted); err != nil {
			fmt.Fprintln(os.Stderr, "self-test:", err)
			os.Exit(1)
		}
		return
	}
	if err := serve(*addr, *duration, trusted); err != nil {
		fmt.Fprintln(os.Stderr, "http example:", err)
		os.Exit(1)
	}
}

func serve(addr string, d time.Duration, trusted []string) error {
	eng := flow.NewEngine()
	if err := eng.LoadRules(rules()); err != nil {
		return err
	}
	h, err := newService(eng, trusted)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	fmt.Printf("serving on http://%s (Ctrl-C to stop); try: curl -si -H 'X-User: ann' http://%s/orders/1\n", ln.Addr(), ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// selfTesting decides the mode: -selftest and -serve win; otherwise a
// terminal serves and anything else (CI, a pipe, a file) self-tests, which
// why explains, so a redirected run is not mistaken for a hung server.
func selfTesting(selftest, serve, tty bool) (self bool, why string) {
	switch {
	case selftest:
		return true, ""
	case serve || tty:
		return false, ""
	}
	return true, "stdout is not a terminal: running the self-test instead of serving (-serve to serve)"
}

type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
