package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// The resources of the demo service: route patterns, which flowhttp uses as
// resource names.
const (
	resProducts = "GET /api/products"
	resOrders   = "POST /api/orders"
	resRecs     = "GET /api/recommendations"
	resShipping = "GET /api/shipping"
)

// An actor is one kind of client in the scenario: its requests are counted
// together, from the client's side (what the 429 bodies said; an open
// breaker's 503 is counted apart, in broken, whatever its level).
type actor struct {
	name string

	sent, ok, errors, dropped, broken atomic.Uint64
	blocked                           [flow.NumLevels]atomic.Uint64
}

// A stream is one actor's traffic to one route: rate(f) requests per second
// at fraction f of the run, each request built by next.
type stream struct {
	actor  *actor
	rate   func(f float64) float64
	next   func(r *rand.Rand) job
	nextAt time.Duration // when the next request is due
}

type job struct {
	actor        *actor
	method, path string
	user, ip     string
}

// The scenario's timeline, as fractions of the run, so that a short run
// (-duration 6s) shows the same story, faster.
const (
	abuseFrom  = 0.05
	coldFrom   = 0.25
	reloadAt   = 0.50
	spikeFrom  = 0.55
	spikeUntil = 0.80
	// The shipping carrier (a dependency of GET /api/shipping) fails in
	// between: the circuit breaker opens, probes, and closes after.
	outageFrom  = 0.30
	outageUntil = 0.50
)

// Sizes of the crowds. The rates are chosen against rules.json: the crowd fits
// every limit, the power user exceeds the per-user one, the abuser the per-IP
// one, and the flash sale the global one.
const (
	crowdUsers = 40
	crowdRate  = 3.0 // GET /api/products per user per second
	orderRate  = 0.25
	powerRate  = 15.0
	abuseRate  = 45.0
	spikeUsers = 60
	spikeRate  = 4.0
	spikeOrder = 0.4
	recsRate   = 120.0 // offered to the warm-up resource, above its stable 100/s
	shipRate   = 40.0  // GET /api/shipping, from the crowd
)

// scenario holds the actors, in the order the table lists them, and their
// streams.
type scenario struct {
	actors  []*actor
	streams []*stream
	// carrierDown is true during the carrier outage; the load sets it, the
	// shipping handler reads it.
	carrierDown atomic.Bool
}

func newScenario() *scenario {
	crowd := &actor{name: fmt.Sprintf("crowd (%d users)", crowdUsers)}
	power := &actor{name: "power user u-4711 (3 IPs)"}
	abuser := &actor{name: "abuser 203.0.113.66"}
	spike := &actor{name: fmt.Sprintf("flash sale (%d users)", spikeUsers)}
	cold := &actor{name: "cold start (recommend.)"}
	ship := &actor{name: "shipping (carrier outage)"}

	always := func(r float64) func(float64) float64 { return func(float64) float64 { return r } }
	between := func(r, from, until float64) func(float64) float64 {
		return func(f float64) float64 {
			if f >= from && f < until {
				return r
			}
			return 0
		}
	}
	crowdJob := func(a *actor, method, path string) func(*rand.Rand) job {
		return func(r *rand.Rand) job {
			i := r.IntN(crowdUsers)
			return job{a, method, path, fmt.Sprintf("u-%d", 1001+i), fmt.Sprintf("10.1.0.%d", 10+i)}
		}
	}
	spikeJob := func(method, path string) func(*rand.Rand) job {
		return func(r *rand.Rand) job {
			i := r.IntN(spikeUsers)
			return job{spike, method, path, fmt.Sprintf("s-%d", 2001+i), fmt.Sprintf("10.2.%d.%d", i/200, 10+i%200)}
		}
	}
	powerIPs := []string{"198.51.100.7", "198.51.100.8", "198.51.100.9"}

	return &scenario{
		actors: []*actor{crowd, power, abuser, spike, cold, ship},
		streams: []*stream{
			{actor: crowd, rate: always(crowdUsers * crowdRate), next: crowdJob(crowd, http.MethodGet, "/api/products")},
			{actor: crowd, rate: always(crowdUsers * orderRate), next: crowdJob(crowd, http.MethodPost, "/api/orders")},
			{actor: power, rate: always(powerRate), next: func(r *rand.Rand) job {
				return job{power, http.MethodGet, "/api/products", "u-4711", powerIPs[r.IntN(len(powerIPs))]}
			}},
			// Anonymous: no X-User, so only the per-IP and global rules see it.
			{actor: abuser, rate: between(abuseRate, abuseFrom, 1), next: func(*rand.Rand) job {
				return job{abuser, http.MethodGet, "/api/products", "", "203.0.113.66"}
			}},
			{actor: spike, rate: between(spikeUsers*spikeRate, spikeFrom, spikeUntil), next: spikeJob(http.MethodGet, "/api/products")},
			{actor: spike, rate: between(spikeUsers*spikeOrder, spikeFrom, spikeUntil), next: spikeJob(http.MethodPost, "/api/orders")},
			{actor: cold, rate: between(recsRate, coldFrom, 1), next: crowdJob(cold, http.MethodGet, "/api/recommendations")},
			{actor: ship, rate: always(shipRate), next: crowdJob(ship, http.MethodGet, "/api/shipping")},
		},
	}
}

// phase names what the scenario is doing at fraction f, for the table.
func phase(f float64) string {
	s := "crowd + power user"
	if f >= abuseFrom {
		s += " + abuser"
	}
	if f >= coldFrom {
		s += " + recommendations"
	}
	if f >= spikeFrom && f < spikeUntil {
		s += " + FLASH SALE"
	}
	if f >= outageFrom && f < outageUntil {
		s += " + CARRIER DOWN"
	}
	return s
}

// load drives the scenario at base for d: one scheduler turns rates into
// jobs, a fixed pool of workers sends them, so concurrency and CPU stay
// bounded whatever the server does. A job that finds the queue full is
// dropped and counted. run returns when every worker is done.
type load struct {
	sc      *scenario
	base    string
	client  *http.Client
	workers int
	start   time.Time
	d       time.Duration
}

func (l *load) run(ctx context.Context) {
	jobs := make(chan job, 256)
	var wg sync.WaitGroup
	for range l.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if ctx.Err() != nil {
					continue // stopping: drain without sending
				}
				l.send(ctx, j)
			}
		}()
	}
	l.schedule(ctx, jobs)
	close(jobs)
	wg.Wait()
}

// schedule emits each stream's jobs as a Poisson process at its rate (users
// do not keep step), checked every 10ms, from a seeded generator so runs are
// alike.
func (l *load) schedule(ctx context.Context, jobs chan<- job) {
	rnd := rand.New(rand.NewPCG(1, 2))
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			el := now.Sub(l.start)
			if el >= l.d {
				return
			}
			f := float64(el) / float64(l.d)
			l.sc.carrierDown.Store(f >= outageFrom && f < outageUntil)
			for _, s := range l.sc.streams {
				rate := s.rate(f)
				if rate <= 0 {
					s.nextAt = el // idle: no backlog when it starts
					continue
				}
				for s.nextAt <= el {
					s.nextAt += time.Duration(rnd.ExpFloat64() / rate * float64(time.Second))
					select {
					case jobs <- s.next(rnd):
					default:
						s.actor.dropped.Add(1)
					}
				}
			}
		}
	}
}

// send makes one request and counts its outcome; a 429's problem body
// says which level refused it. A 503 is an open breaker's: a dependency
// failing, not a limit reached, so it is counted apart.
func (l *load) send(ctx context.Context, j job) {
	req, err := http.NewRequestWithContext(ctx, j.method, l.base+j.path, nil)
	if err != nil {
		j.actor.errors.Add(1)
		return
	}
	if j.user != "" {
		req.Header.Set("X-User", j.user)
	}
	// The demo's clients all connect from 127.0.0.1, a trusted proxy, which
	// forwards each one's own address, as a load balancer would.
	req.Header.Set("X-Forwarded-For", j.ip)
	j.actor.sent.Add(1)
	resp, err := l.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			j.actor.errors.Add(1)
		}
		return
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode < 300:
		j.actor.ok.Add(1)
		_, _ = io.Copy(io.Discard, resp.Body)
	case resp.StatusCode == http.StatusServiceUnavailable:
		j.actor.broken.Add(1)
		_, _ = io.Copy(io.Discard, resp.Body)
	case resp.StatusCode == http.StatusTooManyRequests:
		var p struct {
			Level string `json:"level"`
		}
		lvl := flow.LevelGlobal
		if json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&p) == nil {
			lvl = parseLevel(p.Level)
		}
		j.actor.blocked[lvl].Add(1)
		_, _ = io.Copy(io.Discard, resp.Body)
	default:
		j.actor.errors.Add(1)
		_, _ = io.Copy(io.Discard, resp.Body)
	}
}

func parseLevel(s string) flow.Level {
	if s == "system" {
		return flow.LevelSystem
	}
	if l, err := flow.ParseLevel(s); err == nil {
		return l
	}
	return flow.LevelGlobal
}

func newClient(workers int) *http.Client {
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        workers,
			MaxIdleConnsPerHost: workers,
			MaxConnsPerHost:     workers,
			DisableCompression:  true,
		},
	}
}
