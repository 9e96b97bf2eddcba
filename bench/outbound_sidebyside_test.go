package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivethrottler"

	"github.com/flowgate/flowgate/flow"
)

// The overload simulation of flow's TestOverloadSimulation, on real time,
// so that failsafe-go's adaptive throttler (which reads the wall clock)
// can run in it beside flowgate's client_throttle. The same backend
// (C calls/s, a queue of 0.25 s of work, a refusal costing a tenth of a
// served call) and clients (load × C a second, up to 3 retries on a 503
// with 50ms·2^k backoff, half jitter), on 10ms ticks of the real clock;
// both throttles over a 10 s window. Minutes long: run with
// FLOWGATE_SIM_REALTIME=1.
const (
	rtC        = 200.0
	rtQueue    = 0.25
	rtRefuse   = 0.1
	rtOverload = 20 * time.Second
	rtMeasure  = 10 * time.Second
	rtAfter    = 25 * time.Second
)

// rtGuard admits one attempt (retry: not the call's first) or refuses it;
// done is told whether the backend accepted it.
type rtGuard interface {
	enter(retry bool) (done func(accepted bool), ok bool)
}

type flowGuard struct{ e *flow.Engine }

func (g flowGuard) enter(retry bool) (func(bool), bool) {
	var opts []flow.EntryOption
	if retry {
		opts = append(opts, flow.WithRetry())
	}
	p, err := g.e.Entry("backend", opts...)
	if err != nil {
		return nil, false
	}
	return func(ok bool) {
		if ok {
			p.Exit()
		} else {
			p.Exit(flow.WithError(flow.ErrOverloaded))
		}
	}, true
}

type failsafeGuard struct {
	t adaptivethrottler.AdaptiveThrottler[any]
}

func (g failsafeGuard) enter(bool) (func(bool), bool) {
	if !g.t.TryAcquirePermit() {
		return nil, false
	}
	return func(ok bool) {
		if ok {
			g.t.RecordSuccess()
		} else {
			g.t.RecordFailure()
		}
	}, true
}

type rtAttempt struct {
	try   int
	start time.Time
	at    time.Time
	done  func(bool)
}

type rtSim struct {
	g             rtGuard
	rng           *rand.Rand
	queue, due    []rtAttempt
	debt, frac    float64
	offered, sent int
	lat           []time.Duration
	good          map[int]int
}

func (s *rtSim) attempt(a rtAttempt, now time.Time, measured bool) {
	done, ok := s.g.enter(a.try > 0)
	if !ok {
		return
	}
	if measured {
		s.sent++
	}
	a.done = done
	if float64(len(s.queue)) >= rtC*rtQueue {
		s.debt += rtRefuse
		done(false)
		if a.try < 3 {
			d := 50 * time.Millisecond << a.try
			d = d/2 + time.Duration(s.rng.Int64N(int64(d/2)+1))
			s.due = append(s.due, rtAttempt{try: a.try + 1, start: a.start, at: now.Add(d)})
		}
		return
	}
	s.queue = append(s.queue, a)
}

func (s *rtSim) serve(now, t0 time.Time, dt time.Duration, measured bool) {
	work := rtC*dt.Seconds() - s.debt + s.frac
	s.debt, s.frac = 0, 0
	n := 0
	for ; n < len(s.queue) && work >= 1; n++ {
		work--
		s.queue[n].done(true)
		s.good[int(now.Sub(t0)/time.Second)]++
		if measured {
			s.lat = append(s.lat, now.Sub(s.queue[n].start))
		}
	}
	s.queue = s.queue[n:]
	if len(s.queue) > 0 && work > 0 {
		s.frac = min(work, 1)
	}
}

func runRealtime(g rtGuard, load float64) (goodput, ampl float64, p99, recovery time.Duration) {
	s := &rtSim{g: g, rng: rand.New(rand.NewPCG(1, 2)), good: map[int]int{}}
	tk := time.NewTicker(10 * time.Millisecond)
	defer tk.Stop()
	t0 := time.Now()
	last, acc := t0, 0.0
	for now := range tk.C {
		el := now.Sub(t0)
		if el >= rtOverload+rtAfter {
			break
		}
		l, measured := load, el >= rtOverload-rtMeasure && el < rtOverload
		if el >= rtOverload {
			l = 0.5
		}
		acc += l * rtC * now.Sub(last).Seconds()
		for ; acc >= 1; acc-- {
			if measured {
				s.offered++
			}
			s.attempt(rtAttempt{start: now}, now, measured)
		}
		due := s.due
		s.due = nil
		for _, a := range due {
			if !a.at.After(now) {
				s.attempt(a, now, measured)
			} else {
				s.due = append(s.due, a)
			}
		}
		s.serve(now, t0, now.Sub(last), measured)
		last = now
	}
	good := 0
	for sec := int((rtOverload - rtMeasure) / time.Second); sec < int(rtOverload/time.Second); sec++ {
		good += s.good[sec]
	}
	if len(s.lat) > 0 {
		slices.Sort(s.lat)
		p99 = s.lat[len(s.lat)*99/100]
	}
	recovery = -1
	for sec := int(rtOverload / time.Second); sec < int((rtOverload+rtAfter)/time.Second)-1; sec++ {
		if float64(s.good[sec]) >= 0.95*0.5*rtC {
			recovery = time.Duration(sec)*time.Second - rtOverload
			break
		}
	}
	return float64(good) / rtMeasure.Seconds() / rtC, float64(s.sent) / float64(s.offered), p99, recovery
}

func TestOutboundSideBySide(t *testing.T) {
	if os.Getenv("FLOWGATE_SIM_REALTIME") == "" {
		t.Skip("minutes of real time: set FLOWGATE_SIM_REALTIME=1")
	}
	w := 10 * time.Second
	guards := []struct {
		name string
		g    func() rtGuard
	}{
		{"flowgate client_throttle+retry_budget", func() rtGuard {
			e := flow.NewEngine()
			if err := e.LoadRules([]flow.Rule{{Resource: "backend", Algorithm: flow.AlgoClientThrottle, Window: w},
				{Resource: "backend", Algorithm: flow.AlgoRetryBudget}}); err != nil {
				t.Fatal(err)
			}
			return flowGuard{e}
		}},
		{"failsafe-go throttler (defaults)", func() rtGuard {
			return failsafeGuard{adaptivethrottler.NewBuilder[any]().WithFailureRateThreshold(0.1, 0, w).Build()}
		}},
		{"failsafe-go throttler (failure 0.5, max 1)", func() rtGuard {
			return failsafeGuard{adaptivethrottler.NewBuilder[any]().WithFailureRateThreshold(0.5, 0, w).WithMaxRejectionRate(1).Build()}
		}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-42s %5s %8s %14s %8s %9s\n", "guard", "load", "goodput", "amplification", "p99", "recovery")
	for _, g := range guards {
		gp, am, p99, rec := runRealtime(g.g(), 5)
		fmt.Fprintf(&b, "%-42s %4vx %7.0f%% %14.2f %8v %9v\n", g.name, 5, 100*gp, am, p99.Round(time.Millisecond), rec)
		if gp <= 0 {
			t.Errorf("%s: no goodput at all", g.name)
		}
	}
	t.Logf("real-time overload simulation (C=%v/s, 5x, 10s windows):\n%s", rtC, b.String())
}
