// Command outbound shows the guards of outgoing calls against a backend
// that degrades under load: a fleet of clients calls it through
// flowhttp.NewTransport, each call retried up to 3 times, once without
// guards and once with a client_throttle and a retry_budget.
//
//	go run ./examples/outbound [-load 5] [-phase 6s] [-metrics :9464]
//
// The backend serves C calls a second. Past C its queue grows, and a call
// that would wait over 250ms is refused with a 503, which still costs the
// backend a tenth of a served call. Without guards, each refusal comes back
// as up to three retries and the refusals' cost eats the capacity: the
// retry storm. With the guards, clients refuse locally once the backend
// stops accepting, and retry only within a budget. It prints goodput (the
// successful calls as a share of C) and amplification (the backend's
// attempts per offered call) for both, and exits non-zero if the guards did
// not help. With -metrics it serves the guarded engine's Prometheus metrics
// (the dashboard's Outbound row) while it runs.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/flow/flowhttp"
	"github.com/flowgate/flowgate/metrics"
)

// The backend's capacity and the clients' patience.
const (
	capacity   = 50.0                   // calls a second the backend serves
	queueMax   = 250 * time.Millisecond // longest wait before a 503
	refuseCost = 0.1                    // a refusal's cost, in served calls
	callBudget = 2 * time.Second        // a client gives a call this long, retries included
)

func main() {
	o := options{load: 5, phase: 6 * time.Second}
	flag.Float64Var(&o.load, "load", o.load, "offered load, in multiples of the backend's capacity")
	flag.DurationVar(&o.phase, "phase", o.phase, "how long each run offers the load (the last two thirds are measured)")
	addr := flag.String("metrics", "", "serve the guarded engine's Prometheus metrics on this address (e.g. :9464)")
	flag.Parse()
	if *addr != "" {
		reg := prometheus.NewRegistry()
		o.register = func(eng *flow.Engine) { reg.MustRegister(metrics.NewCollector(eng)) }
		srv := &http.Server{Addr: *addr, Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: time.Second}
		go srv.ListenAndServe()
		defer srv.Close()
	}
	if _, err := run(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "outbound:", err)
		os.Exit(1)
	}
}

type options struct {
	load     float64
	phase    time.Duration
	register func(*flow.Engine) // the guarded engine, for -metrics
}

// guards are the rules of the guarded run: windows of 10s rather than the
// defaults' 2 minutes, so a short run sees the throttle act and forget.
var guards = []flow.Rule{
	{ID: "throttle", Resource: "GET backend", Algorithm: flow.AlgoClientThrottle, Window: 10 * time.Second},
	{ID: "budget", Resource: "GET backend", Algorithm: flow.AlgoRetryBudget},
}

// result is one run's figures.
type result struct {
	name                  string
	offered, ok, attempts int64 // in the measured part
	goodput, amplif       float64
	p99                   time.Duration
	outbound              string
}

// run measures both runs, prints them, and returns them (unguarded first)
// with an error when the guards did not raise goodput and lower
// amplification.
func run(out io.Writer, o options) ([]result, error) {
	fmt.Fprintf(out, "backend: %.0f calls/s, 503 past a %v queue (a refusal costs %.0f%% of a call); offered %.0f calls/s (%.1f×) for %v, each retried up to 3 times\n",
		capacity, queueMax, 100*refuseCost, o.load*capacity, o.load, o.phase)
	var res []result
	for _, g := range []struct {
		name  string
		rules []flow.Rule
	}{{"no guards", nil}, {"throttle + budget", guards}} {
		eng := flow.NewEngine()
		if err := eng.LoadRules(g.rules); err != nil {
			return nil, err
		}
		if g.rules != nil && o.register != nil {
			o.register(eng)
		}
		r := fleet(eng, o)
		r.name = g.name
		res = append(res, r)
	}
	fmt.Fprintf(out, "%-18s %8s %8s %14s %9s\n", "", "goodput", "p99", "amplification", "attempts")
	for _, r := range res {
		fmt.Fprintf(out, "%-18s %7.0f%% %8v %14.2f %9d %s\n", r.name, 100*r.goodput, r.p99.Round(time.Millisecond), r.amplif, r.attempts, r.outbound)
	}
	bare, guarded := res[0], res[1]
	if guarded.goodput <= bare.goodput || guarded.amplif >= bare.amplif {
		return res, fmt.Errorf("the guards did not help: goodput %.2f vs %.2f, amplification %.2f vs %.2f",
			guarded.goodput, bare.goodput, guarded.amplif, bare.amplif)
	}
	fmt.Fprintf(out, "ok: the guards raised goodput from %.0f%% to %.0f%% of capacity and cut amplification from %.2f to %.2f\n",
		100*bare.goodput, 100*guarded.goodput, bare.amplif, guarded.amplif)
	return res, nil
}

// fleet offers o.load × capacity calls a second, evenly spaced, through a
// guarded transport on eng, and measures the last two thirds of the phase.
func fleet(eng *flow.Engine, o options) result {
	b := &backend{}
	srv := httptest.NewServer(b)
	defer srv.Close()
	base := &http.Transport{MaxIdleConnsPerHost: 1024}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: flowhttp.NewTransport(eng, base,
		flowhttp.WithCallResource(func(*http.Request) string { return "GET backend" }),
		flowhttp.WithRetries(flow.RetryPolicy{Attempts: 4}))}

	var (
		mu        sync.Mutex
		latencies []time.Duration
		offered   atomic.Int64
		wg        sync.WaitGroup
	)
	start := time.Now()
	from := start.Add(o.phase / 3)
	every := time.Duration(float64(time.Second) / (o.load * capacity))
	var attemptsAtFrom int64
	for next := start; next.Before(start.Add(o.phase)); next = next.Add(every) {
		time.Sleep(time.Until(next))
		measured := !next.Before(from)
		if measured && offered.Load() == 0 {
			attemptsAtFrom = b.attempts.Load()
		}
		if measured {
			offered.Add(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			if call(client, srv.URL) && measured {
				mu.Lock()
				latencies = append(latencies, time.Since(t0))
				mu.Unlock()
			}
		}()
	}
	attempts := b.attempts.Load() - attemptsAtFrom
	wg.Wait()
	span := o.phase - o.phase/3
	r := result{offered: offered.Load(), ok: int64(len(latencies)), attempts: attempts}
	r.goodput = float64(r.ok) / (capacity * span.Seconds())
	r.amplif = float64(attempts) / float64(max(1, r.offered))
	if len(latencies) > 0 {
		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		r.p99 = latencies[len(latencies)*99/100]
	}
	for _, rs := range eng.Snapshot().Rules {
		if ob := rs.Outbound; ob != nil {
			r.outbound += fmt.Sprintf(" %s refused %d", rs.ID, ob.Refused)
		}
	}
	return r
}

// call makes one call, retries included, and reports whether it succeeded.
func call(c *http.Client, url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), callBudget)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil { // refused locally (a *flow.BlockError), or the backend failed us
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// backend serves capacity calls a second as one queue: a call waits for
// the work queued before it, then is served; a call that would wait longer
// than queueMax is refused at once with a 503, and the refusal adds a
// tenth of a call's work to the queue.
type backend struct {
	mu       sync.Mutex
	free     time.Time // when the work queued so far is done
	attempts atomic.Int64
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.attempts.Add(1)
	wait, ok := b.admit(time.Now())
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	select {
	case <-time.After(wait):
		io.WriteString(w, "ok\n")
	case <-r.Context().Done():
	}
}

// admit queues a call arriving at now: how long until it is served, or
// false when it is refused.
func (b *backend) admit(now time.Time) (time.Duration, bool) {
	per := time.Duration(float64(time.Second) / capacity)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.free.Before(now) {
		b.free = now
	}
	wait := b.free.Sub(now)
	if wait > queueMax {
		b.free = b.free.Add(time.Duration(refuseCost * float64(per)))
		return 0, false
	}
	b.free = b.free.Add(per)
	return wait + per, true
}
