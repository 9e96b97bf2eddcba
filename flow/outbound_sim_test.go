package flow

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// The closed-loop overload simulation of the outbound guards, on virtual
// time (10ms ticks of a clock.Fake). A backend of capacity C keeps a FIFO
// queue of at most simQueue of work; an attempt arriving at a full queue
// is answered 503 at once, and refusing it still costs simRefuseCost of a
// served call (parsing, TLS, logging): past C, the error rate grows and
// the work left for real calls shrinks, which is what turns retries into a
// storm. Clients offer load× C new calls a second, evenly; a call
// answered 503 is retried up to 3 times (4 attempts), after 50ms·2^k less
// up to half of it in jitter (a seeded source). A call refused locally
// (throttle or budget) is not retried. Each attempt enters the engine
// (retries WithRetry) and exits at its answer, a 503 with ErrOverloaded.
const (
	simC          = 200.0 // calls a second the backend serves
	simTick       = 10 * time.Millisecond
	simQueue      = 0.25 // seconds of work the queue holds
	simRefuseCost = 0.1  // of a served call
	simOverload   = 30 * time.Second
	simMeasure    = 20 * time.Second // the overload's last 20s are measured
	simAfter      = 150 * time.Second
	simAfterLoad  = 0.5 // offered after the overload, × C
)

type simAttempt struct {
	call  int // index into sim.start
	try   int
	at    time.Duration // when it is due (a retry) or entered the queue
	p     Permit
	entry time.Duration
}

type simResult struct {
	goodput, amplification float64
	p99                    time.Duration
	recovery               time.Duration // -1: not within simAfter
}

type sim struct {
	e             *Engine
	clk           *clock.Fake
	rng           *rand.Rand
	start         []time.Duration // each call's first attempt
	queue         []simAttempt
	due           []simAttempt // retries waiting for their time
	debt          float64      // this tick's refusals' cost
	frac          float64      // the part of a call's work left from the last tick
	offered, sent int
	lat           []time.Duration
	good          []int // successes per second
}

func newSim(rules []Rule) *sim {
	clk := clock.NewFake(t0)
	e := NewEngine(WithClock(clk), withSeed(7))
	if err := e.LoadRules(rules); err != nil {
		panic(err)
	}
	return &sim{e: e, clk: clk, rng: rand.New(rand.NewPCG(1, 2))}
}

// attempt enters the engine for a and, when admitted, sends it.
func (s *sim) attempt(a simAttempt, now time.Duration, measured bool) {
	opts := []EntryOption(nil)
	if a.try > 0 {
		opts = append(opts, WithRetry())
	}
	p, err := s.e.Entry("GET backend", opts...)
	if err != nil {
		return // refused locally: not retried
	}
	if measured {
		s.sent++
	}
	a.p, a.entry = p, now
	if float64(len(s.queue)) >= simC*simQueue {
		s.debt += simRefuseCost
		p.Exit(WithError(ErrOverloaded))
		if a.try < 3 {
			d := 50 * time.Millisecond << a.try
			d = d/2 + time.Duration(s.rng.Int64N(int64(d/2)+1))
			s.due = append(s.due, simAttempt{call: a.call, try: a.try + 1, at: now + d})
		}
		return
	}
	s.queue = append(s.queue, a)
}

// serve spends one tick of the backend's work: first on what this tick's
// refusals cost, then on the queue's head. Work is not carried over: a
// tick whose refusals took it all serves nothing; only the fraction of a
// call a busy tick could not use carries on (frac), so that the whole
// work is usable.
func (s *sim) serve(now time.Duration, measured bool) {
	work := simC*simTick.Seconds() - s.debt + s.frac
	s.debt, s.frac = 0, 0
	n := 0
	for ; n < len(s.queue) && work >= 1; n++ {
		work--
		a := s.queue[n]
		a.p.Exit()
		sec := int(now / time.Second)
		for len(s.good) <= sec {
			s.good = append(s.good, 0)
		}
		s.good[sec]++
		if measured {
			s.lat = append(s.lat, now+simTick-s.start[a.call])
		}
	}
	s.queue = s.queue[n:]
	if len(s.queue) > 0 && work > 0 {
		s.frac = work
	}
}

func (s *sim) tick(now time.Duration, load float64, acc *float64, measured bool) {
	*acc += load * simC * simTick.Seconds()
	for ; *acc >= 1; *acc-- {
		s.start = append(s.start, now)
		if measured {
			s.offered++
		}
		s.attempt(simAttempt{call: len(s.start) - 1}, now, measured)
	}
	due := s.due
	s.due = nil // attempt files new retries here
	for _, a := range due {
		if a.at <= now {
			s.attempt(a, now, measured)
		} else {
			s.due = append(s.due, a)
		}
	}
	s.serve(now, measured)
}

func runSim(rules []Rule, load float64) simResult {
	s := newSim(rules)
	var acc float64
	var now time.Duration
	for ; now < simOverload; now += simTick {
		s.tick(now, load, &acc, now >= simOverload-simMeasure)
		s.clk.Advance(simTick)
	}
	for ; now < simOverload+simAfter; now += simTick {
		s.tick(now, simAfterLoad, &acc, false)
		s.clk.Advance(simTick)
	}
	r := simResult{
		goodput:       float64(s.countGood(simOverload-simMeasure, simOverload)) / simMeasure.Seconds() / simC,
		amplification: float64(s.sent) / float64(s.offered),
		recovery:      -1,
	}
	if len(s.lat) > 0 {
		slices.Sort(s.lat)
		r.p99 = s.lat[len(s.lat)*99/100]
	}
	// Recovered: the first second after the overload whose successes reach
	// 95% of what was offered then.
	for sec := int(simOverload / time.Second); sec < len(s.good); sec++ {
		if float64(s.good[sec]) >= 0.95*simAfterLoad*simC {
			r.recovery = time.Duration(sec)*time.Second - simOverload
			break
		}
	}
	return r
}

func (s *sim) countGood(from, to time.Duration) int {
	n := 0
	for sec := int(from / time.Second); sec < int(to/time.Second) && sec < len(s.good); sec++ {
		n += s.good[sec]
	}
	return n
}

var simConfigs = []struct {
	name  string
	rules []Rule
}{
	{"no protection", nil},
	{"client_throttle", []Rule{{Resource: "GET backend", Algorithm: AlgoClientThrottle}}},
	{"retry_budget", []Rule{{Resource: "GET backend", Algorithm: AlgoRetryBudget}}},
	{"both", []Rule{{Resource: "GET backend", Algorithm: AlgoClientThrottle}, {Resource: "GET backend", Algorithm: AlgoRetryBudget}}},
	// A shorter window forgets the overload sooner: the recovery time is
	// about the window's.
	{"both, window 10s", []Rule{{Resource: "GET backend", Algorithm: AlgoClientThrottle, Window: 10 * time.Second},
		{Resource: "GET backend", Algorithm: AlgoRetryBudget}}},
}

// TestOverloadSimulation runs every configuration at 1×, 3× and 5× C (all
// of 1×–5× with FLOWGATE_SIM=full) and holds the figures the outbound
// guards promise: without protection the retry storm, with the throttle
// and budget together goodput >= 90% of C at 5× with amplification <= 1.1.
// The simulation is deterministic, so every row of docs/outbound.md's
// table that it ran must read exactly as the docs print it.
func TestOverloadSimulation(t *testing.T) {
	loads := []float64{1, 3, 5}
	if os.Getenv("FLOWGATE_SIM") == "full" {
		loads = []float64{1, 2, 3, 4, 5}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %5s %8s %14s %8s %9s\n", "guard", "load", "goodput", "amplification", "p99", "recovery")
	got := map[string]simResult{}
	for _, c := range simConfigs {
		for _, l := range loads {
			r := runSim(c.rules, l)
			got[fmt.Sprintf("%s@%v", c.name, l)] = r
			rec := "none"
			if r.recovery >= 0 {
				rec = r.recovery.String()
			}
			p99 := "-"
			if r.p99 > 0 {
				p99 = r.p99.String()
			}
			fmt.Fprintf(&b, "%-16s %4vx %7.0f%% %14.2f %8s %9s\n", c.name, l, 100*r.goodput, r.amplification, p99, rec)
		}
	}
	t.Logf("overload simulation (virtual time, C=%v/s):\n%s", simC, b.String())
	checkSimTable(t, got)
	if r := got["no protection@5"]; r.amplification < 2 || r.goodput > 0.5 {
		t.Errorf("no protection at 5x: goodput %.2f, amplification %.2f: want the retry storm (amplification >= 2, goodput <= 50%%)", r.goodput, r.amplification)
	}
	if r := got["both@5"]; r.goodput < 0.9 || r.amplification > 1.1 {
		t.Errorf("throttle and budget at 5x: goodput %.2f, amplification %.2f: want >= 0.90 and <= 1.1", r.goodput, r.amplification)
	}
	if r := got["retry_budget@5"]; r.amplification > 1.3 {
		t.Errorf("retry budget at 5x: amplification %.2f, want <= 1.3 (ratio 0.2 plus the minimum)", r.amplification)
	}
}

// simDocNames maps the guard column of docs/outbound.md's table to
// simConfigs' names.
var simDocNames = map[string]string{"none": "no protection", "both, `window` 10s": "both, window 10s"}

// checkSimTable compares each row of the overload table in
// docs/outbound.md whose guard and load the run computed with the
// figures of got, cell by cell as the table prints them.
func checkSimTable(t *testing.T, got map[string]simResult) {
	t.Helper()
	doc, err := os.ReadFile("../docs/outbound.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 6 || !strings.HasSuffix(cells[1], "×") {
			continue
		}
		guard := cells[0]
		if n, ok := simDocNames[guard]; ok {
			guard = n
		}
		r, ok := got[guard+"@"+strings.TrimSuffix(cells[1], "×")]
		if !ok {
			continue // a load this run did not compute (FLOWGATE_SIM=full runs all)
		}
		checked++
		if want, have := strings.Join(cells[2:], " | "), simRow(r); want != have {
			t.Errorf("docs/outbound.md: %s at %s reads %q, the simulation gives %q", cells[0], cells[1], want, have)
		}
	}
	if checked == 0 {
		t.Error("docs/outbound.md: no row of the overload table matched a configuration the simulation ran")
	}
}

// simRow is r as a row of docs/outbound.md's table prints it, from the
// goodput column on.
func simRow(r simResult) string {
	p99, rec := "–", "none"
	if r.p99 > 0 {
		p99 = r.p99.String()
	}
	if r.recovery >= 0 {
		rec = r.recovery.String()
	}
	return fmt.Sprintf("%.0f%% | %.2f | %s | %s", 100*r.goodput, r.amplification, p99, rec)
}
