package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// runSelfTest serves the example on a free loopback port, drives three
// scenarios at it over real connections, prints what passed and what was
// blocked, and fails if a limit did not act at all.
func runSelfTest(out io.Writer, trusted []string) error {
	eng := flow.NewEngine()
	if err := eng.LoadRules(rules()); err != nil {
		return err
	}
	h, err := newService(eng, trusted)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		_ = srv.Close()
		<-served
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := &driver{ctx: ctx, base: "http://" + ln.Addr().String(), client: &http.Client{Timeout: 5 * time.Second},
		trustsLoopback: len(trusted) > 0}
	fmt.Fprintf(out, "flowgate http example: self-test against %s\n", d.base)

	var errs []error
	errs = append(errs, d.perUser(out), d.perIP(out), d.queueing(out))
	return errors.Join(errs...)
}

type driver struct {
	ctx            context.Context
	base           string
	client         *http.Client
	trustsLoopback bool // -trust was given: X-Forwarded-For may be believed
}

// result is one response, reduced to what the scenarios print.
type result struct {
	code    int
	headers http.Header
	took    time.Duration
}

func (d *driver) do(method, path string, header map[string]string) (result, error) {
	req, err := http.NewRequestWithContext(d.ctx, method, d.base+path, nil)
	if err != nil {
		return result{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := d.client.Do(req)
	if err != nil {
		return result{}, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return result{code: resp.StatusCode, headers: resp.Header, took: time.Since(start)}, nil
}

// tally counts outcomes and keeps the first refusal's headers.
type tally struct {
	passed, blocked int
	first429        http.Header
	longest         time.Duration
}

func (t *tally) add(r result) {
	if r.code == http.StatusTooManyRequests {
		t.blocked++
		if t.first429 == nil {
			t.first429 = r.headers
		}
		return
	}
	t.passed++
	t.longest = max(t.longest, r.took)
}

func (t *tally) String() string { return fmt.Sprintf("%d passed, %d blocked", t.passed, t.blocked) }

// expect fails the self-test when a limit did nothing: some calls must pass
// and some must be refused.
func (t *tally) expect(scenario string, wantBlocked bool) error {
	switch {
	case t.passed == 0:
		return fmt.Errorf("%s: nothing passed", scenario)
	case wantBlocked && t.blocked == 0:
		return fmt.Errorf("%s: nothing was blocked", scenario)
	case !wantBlocked && t.blocked > 0:
		return fmt.Errorf("%s: %d blocked, want none", scenario, t.blocked)
	}
	return nil
}

func (t *tally) printRefusal(out io.Writer) {
	if t.first429 == nil {
		return
	}
	for _, k := range []string{"Retry-After", "RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if v := t.first429.Get(k); v != "" {
			fmt.Fprintf(out, "      %s: %s\n", k, v)
		}
	}
}

// perUser: ann reads twelve orders in a burst against 5/s per user; bob's
// quota is his own. Twelve, so that even a burst that straddles a window
// boundary (at most 5+5 pass) shows refusals.
func (d *driver) perUser(out io.Writer) error {
	fmt.Fprintln(out, "per-user limit: GET /orders/{id}, 5 per second per X-User")
	var ann, bob tally
	for i := 1; i <= 12; i++ {
		r, err := d.do("GET", fmt.Sprintf("/orders/%d", i), map[string]string{"X-User": "ann"})
		if err != nil {
			return err
		}
		ann.add(r)
	}
	for i := 1; i <= 3; i++ {
		r, err := d.do("GET", fmt.Sprintf("/orders/%d", i), map[string]string{"X-User": "bob"})
		if err != nil {
			return err
		}
		bob.add(r)
	}
	fmt.Fprintf(out, "  ann, 12 requests: %s; the first 429 said:\n", &ann)
	ann.printRefusal(out)
	fmt.Fprintf(out, "  bob, 3 requests: %s\n", &bob)
	return errors.Join(ann.expect("per-user (ann)", true), bob.expect("per-user (bob)", false))
}

// perIP: five searches that each claim another client in X-Forwarded-For.
// The peer (127.0.0.1) is not a trusted proxy, so the header is ignored and
// all five count against one IP: 3 per 10s.
func (d *driver) perIP(out io.Writer) error {
	fmt.Fprintln(out, "per-IP limit: GET /search, 3 per 10 seconds per client IP")
	var t tally
	for i := 1; i <= 5; i++ {
		r, err := d.do("GET", "/search", map[string]string{"X-Forwarded-For": fmt.Sprintf("198.51.100.%d", i)})
		if err != nil {
			return err
		}
		t.add(r)
	}
	why := "the peer is not a trusted proxy, so the header is not believed"
	if d.trustsLoopback {
		why = "the peer is a trusted proxy, so each header names a client"
	}
	fmt.Fprintf(out, "  5 requests, each with a different X-Forwarded-For: %s (%s)\n", &t, why)
	return t.expect("per-IP", true)
}

// queueing: eight writes at once against a leaky bucket of one per 200ms
// that lets a call wait up to 1s: the first six are spaced out, the last two
// would wait longer than 1s and are refused.
func (d *driver) queueing(out io.Writer) error {
	fmt.Fprintln(out, "queueing: POST /orders, one every 200ms, waiting up to 1s")
	var (
		mu   sync.Mutex
		t    tally
		errs []error
		wg   sync.WaitGroup
		took []time.Duration
	)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := d.do("POST", "/orders", nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			t.add(r)
			if r.code != http.StatusTooManyRequests {
				took = append(took, r.took)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	parts := make([]string, len(took))
	for i, d := range took {
		parts[i] = d.Round(10 * time.Millisecond).String()
	}
	fmt.Fprintf(out, "  8 concurrent requests: %s; latencies of those that passed: %s\n", &t, strings.Join(parts, " "))
	return t.expect("queueing", true)
}
