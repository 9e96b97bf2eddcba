package simulate

import (
	"container/heap"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// Service is a simulated service for concurrency limits: Capacity workers
// serve calls in parallel at full speed, each call needing Latency × a
// uniform draw from [1-Jitter, 1+Jitter] of work; above Capacity calls in
// flight the workers are shared (processor sharing), so every call slows
// by inFlight/Capacity: latency grows with the queue, throughput stays at
// Capacity/Latency.
type Service struct {
	Capacity int           // C: calls served at once at full speed; default 50
	Latency  time.Duration // L: mean service time with no queue; default 10ms
	Jitter   float64       // spread of the work per call; default 0.5 (0 < Jitter < 1)
}

// Rate is the most calls per second the service completes: Capacity/Latency.
func (s Service) Rate() float64 { return float64(s.Capacity) / s.Latency.Seconds() }

// Mix is the share of the offered calls of each priority, indexed by
// priority+1: low, normal, high, critical. The zero Mix is all normal.
type Mix [4]float64

// LoadRun drives a real flow.Engine (on a clock.Fake) with open-loop
// Poisson traffic into a Service: each arrival calls Entry with its
// priority, each admitted call Exits when the service finishes it. The
// engine's rules decide; the run only measures.
type LoadRun struct {
	Service
	Engine   *flow.Engine // its clock must be Clock
	Clock    *clock.Fake
	Resource string
	// Load is the offered rate at t, in multiples of Service.Rate.
	Load func(t time.Duration) float64
	Mix  Mix
	// Step is the time resolution; default Latency/20.
	Step time.Duration
	// Every is the period of the samples in Result.Samples; default 100ms.
	Every time.Duration
	// OnSample, when set, is called after every sample with the mean
	// utilisation (busy workers / Capacity, 0..1) over it: e.g. to step a
	// CPU controller that reads it as the CPU.
	OnSample func(s Sample)
	Seed     uint64
}

// Sample is the state of a LoadRun over one Every period.
type Sample struct {
	T           time.Duration // end of the period, since the start
	Offered     float64       // offered load, multiples of Rate
	Limit       float64       // the first rule's effective limit at T (adaptive: its current limit)
	InFlight    float64       // mean calls in flight at the service
	Utilisation float64       // mean busy workers / Capacity
	P50, P99    time.Duration // latency of the calls completed in the period
	Goodput     [4]float64    // completions per second over Rate, by priority+1
}

// Result is a run's samples and its figures over [From, end).
type Result struct {
	Samples []Sample
	From    time.Duration
	// Goodput is the completions per second over Rate.
	Goodput float64
	// Utilisation is the mean busy workers / Capacity.
	Utilisation float64
	// P50, P99 are the latencies of the calls completed.
	P50, P99 time.Duration
	// Offered and Admitted count calls by priority+1.
	Offered, Admitted [4]uint64
	// Shed counts refusals whose Reason was flow.ReasonPriority.
	Shed [4]uint64
	// LimitMin, LimitMax bound the samples' Limit (peak to peak).
	LimitMin, LimitMax float64
}

// AdmittedRatio is Admitted/Offered for priority p (1 when none offered).
func (r Result) AdmittedRatio(p flow.Priority) float64 {
	i := int(p) + 1
	if r.Offered[i] == 0 {
		return 1
	}
	return float64(r.Admitted[i]) / float64(r.Offered[i])
}

type call struct {
	finish float64 // in work units (ns of full-speed service) on the virtual work clock
	start  int64
	class  int
	permit flow.Permit
}

type callHeap []call

func (h callHeap) Len() int           { return len(h) }
func (h callHeap) Less(i, j int) bool { return h[i].finish < h[j].finish }
func (h callHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *callHeap) Push(x any)        { *h = append(*h, x.(call)) }
func (h *callHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

func (r LoadRun) withDefaults() (LoadRun, error) {
	if r.Capacity == 0 {
		r.Capacity = 50
	}
	if r.Latency == 0 {
		r.Latency = 10 * time.Millisecond
	}
	if r.Jitter == 0 {
		r.Jitter = 0.5
	}
	if r.Step == 0 {
		r.Step = r.Latency / 20
	}
	if r.Every == 0 {
		r.Every = 100 * time.Millisecond
	}
	if r.Mix == (Mix{}) {
		r.Mix[1] = 1
	}
	switch {
	case r.Engine == nil || r.Clock == nil || r.Load == nil:
		return r, errors.New("simulate: LoadRun needs Engine, Clock and Load")
	case r.Capacity < 1 || r.Latency <= 0 || r.Jitter < 0 || r.Jitter >= 1 || r.Step <= 0 || r.Every < r.Step:
		return r, errors.New("simulate: LoadRun: bad Capacity, Latency, Jitter, Step or Every")
	}
	return r, nil
}

// Run simulates d of virtual time and measures from on.
func (r LoadRun) Run(d, from time.Duration) (Result, error) {
	r, err := r.withDefaults()
	if err != nil {
		return Result{}, err
	}
	sim := &loadSim{LoadRun: r, from: from, rng: rand.New(rand.NewPCG(r.Seed, r.Seed^0x9e3779b97f4a7c15)),
		res: Result{From: from, LimitMin: math.Inf(1), LimitMax: math.Inf(-1)}}
	for _, m := range r.Mix {
		sim.mixSum += m
	}
	t0 := r.Clock.Nanotime()
	every := int(r.Every / r.Step)
	for t := time.Duration(0); t < d; t += r.Step {
		measure := t >= from
		sim.arrive(t, measure)
		busy := sim.serve(measure)
		if measure {
			sim.res.Utilisation += busy
		}
		sim.steps++
		if sim.steps%every == 0 {
			sim.sample(t, t0, every, measure)
		}
	}
	// End every call still in service so the engine is left clean.
	for _, c := range sim.inService {
		c.permit.Exit()
	}
	return sim.result(d), nil
}

// loadSim is one LoadRun in progress.
type loadSim struct {
	LoadRun
	from      time.Duration
	rng       *rand.Rand
	mixSum    float64
	res       Result
	inService callHeap
	work      float64 // virtual work clock: work done by one full-speed worker
	nextArr   float64 // next arrival, ns since start
	lat       []float64
	allLt     []float64
	cur       Sample
	steps     int
	utilSum   float64
	flightSum float64
	done      [4]uint64
}

// arrive admits or refuses the arrivals in [t, t+Step): Poisson at the
// offered rate.
func (s *loadSim) arrive(t time.Duration, measure bool) {
	now, step := float64(t), float64(s.Step)
	rate := s.Load(t) * s.Rate() / 1e9 // per ns
	if rate > 0 && s.nextArr < now {
		s.nextArr = now + s.rng.ExpFloat64()/rate
	}
	for rate > 0 && s.nextArr < now+step {
		s.nextArr += s.rng.ExpFloat64() / rate
		class := pick(s.rng, s.Mix, s.mixSum)
		if measure {
			s.res.Offered[class]++
		}
		p, err := s.Engine.Entry(s.Resource, flow.WithPriority(flow.Priority(class-1)))
		if err != nil {
			var be *flow.BlockError
			if measure && errors.As(err, &be) && be.Reason == flow.ReasonPriority {
				s.res.Shed[class]++
			}
			continue
		}
		if measure {
			s.res.Admitted[class]++
		}
		w := float64(s.Latency) * (1 + s.Jitter*(2*s.rng.Float64()-1))
		heap.Push(&s.inService, call{finish: s.work + w, start: s.Clock.Nanotime(), class: class, permit: p})
	}
}

// serve runs the service for one step (processor sharing above
// Capacity), ends the calls it finished, and returns how busy it was.
func (s *loadSim) serve(measure bool) float64 {
	step := float64(s.Step)
	n := float64(len(s.inService))
	s.work += step * min(1, float64(s.Capacity)/max(n, 1))
	busy := min(n, float64(s.Capacity)) / float64(s.Capacity)
	s.utilSum += busy
	s.flightSum += n
	s.Clock.Advance(s.Step)
	for len(s.inService) > 0 && s.inService[0].finish <= s.work {
		c := heap.Pop(&s.inService).(call)
		c.permit.Exit()
		l := float64(s.Clock.Nanotime() - c.start)
		s.lat = append(s.lat, l)
		s.cur.Goodput[c.class]++
		if measure {
			s.allLt = append(s.allLt, l)
			s.done[c.class]++
		}
	}
	return busy
}

// sample closes the current Sample (every Every of virtual time).
func (s *loadSim) sample(t time.Duration, t0 int64, every int, measure bool) {
	cur := &s.cur
	cur.T = time.Duration(s.Clock.Nanotime() - t0)
	cur.Offered = s.Load(t)
	cur.Limit = firstLimit(s.Engine)
	cur.InFlight = s.flightSum / float64(every)
	cur.Utilisation = s.utilSum / float64(every)
	cur.P50, cur.P99 = quantile(s.lat, 0.5), quantile(s.lat, 0.99)
	for i := range cur.Goodput {
		cur.Goodput[i] /= s.Every.Seconds() * s.Rate()
	}
	if measure {
		s.res.LimitMin, s.res.LimitMax = min(s.res.LimitMin, cur.Limit), max(s.res.LimitMax, cur.Limit)
	}
	s.res.Samples = append(s.res.Samples, *cur)
	if s.OnSample != nil {
		s.OnSample(*cur)
	}
	s.cur, s.lat, s.utilSum, s.flightSum = Sample{}, s.lat[:0], 0, 0
}

// result is the run's Result over [from, d).
func (s *loadSim) result(d time.Duration) Result {
	res := s.res
	if span := (d - s.from).Seconds(); span > 0 {
		var total uint64
		for _, n := range s.done {
			total += n
		}
		res.Goodput = float64(total) / span / s.Rate()
		res.Utilisation /= float64(d-s.from) / float64(s.Step)
	}
	res.P50, res.P99 = quantile(s.allLt, 0.5), quantile(s.allLt, 0.99)
	return res
}

func pick(rng *rand.Rand, m Mix, sum float64) int {
	x := rng.Float64() * sum
	for i, f := range m {
		if x < f {
			return i
		}
		x -= f
	}
	return len(m) - 1
}

// quantile sorts xs (ns) in place and returns its q-quantile (nearest rank).
func quantile(xs []float64, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return time.Duration(xs[max(i, 0)])
}

// firstLimit is the effective limit of the engine's first rule (for an
// adaptive_concurrency rule, its current limit); 0 with no rule.
func firstLimit(e *flow.Engine) float64 {
	s := e.Snapshot()
	if len(s.Rules) == 0 {
		return 0
	}
	return s.Rules[0].EffectiveLimit
}
