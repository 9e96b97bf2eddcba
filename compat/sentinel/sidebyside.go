package sentinel

import (
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	sapi "github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/base"
	cb "github.com/alibaba/sentinel-golang/core/circuitbreaker"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules/sentinel"
)

// call is one call of a trace: when it arrives (from the trace's start)
// and how long it holds its permit before Exit.
type call struct {
	at, hold time.Duration
	fail     bool   // the call ends in an error (recorded on both engines)
	arg      string // the value of the call's paramKey param ("" for none)
}

// paramKey is the param hotspot traces carry their arg in.
const paramKey = "tenant"

var errCall = errors.New("call failed")

// outcome compares one trace on both engines.
type outcome struct {
	Calls, Same            int
	SentinelOK, FlowgateOK int
	Seconds                float64
	// Of the calls both admitted: how many either engine queued, and how
	// many were given the same wait to the nanosecond.
	BothOK, Queued, SameWait int
}

func (o outcome) share() float64 { return float64(o.Same) / float64(o.Calls) }

// transition is one breaker state change on the virtual clock.
type transition struct {
	at       time.Time
	from, to string // flowgate's names: closed, open, half_open
}

func (t transition) String() string {
	return fmt.Sprintf("%s->%s@%s", t.from, t.to, t.at.Format("15:04:05.000000"))
}

// transitions collects the breaker transitions of both engines per
// resource: sentinel-golang's through its (process-wide) listener,
// flowgate's through flow.WithBreakerListener.
type transitions struct {
	mu       sync.Mutex
	clk      *vclock
	sentinel map[string][]transition
	flowgate map[string][]transition
}

func newTransitions(clk *vclock) *transitions {
	return &transitions{clk: clk, sentinel: map[string][]transition{}, flowgate: map[string][]transition{}}
}

// sentinelName maps sentinel-golang's state names to flowgate's.
func sentinelName(s cb.State) string {
	switch s {
	case cb.Closed:
		return "closed"
	case cb.Open:
		return "open"
	case cb.HalfOpen:
		return "half_open"
	}
	return s.String()
}

func (t *transitions) addSentinel(res string, from cb.State, to string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sentinel[res] = append(t.sentinel[res], transition{at: t.clk.Now(), from: sentinelName(from), to: to})
}

func (t *transitions) OnTransformToClosed(prev cb.State, r cb.Rule) {
	t.addSentinel(r.Resource, prev, "closed")
}
func (t *transitions) OnTransformToOpen(prev cb.State, r cb.Rule, _ interface{}) {
	t.addSentinel(r.Resource, prev, "open")
}
func (t *transitions) OnTransformToHalfOpen(prev cb.State, r cb.Rule) {
	t.addSentinel(r.Resource, prev, "half_open")
}

// flowgateListener is the flow.WithBreakerListener func.
func (t *transitions) flowgateListener(ev flow.BreakerEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flowgate[ev.Resource] = append(t.flowgate[ev.Resource], transition{at: ev.Time, from: ev.From.String(), to: ev.To.String()})
}

// compare returns both engines' transitions of res and how many of them
// agree in order, states and instant (to the nanosecond).
func (t *transitions) compare(res string) (s, f []transition, same int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, f = t.sentinel[res], t.flowgate[res]
	for i := range min(len(s), len(f)) {
		if s[i] == f[i] {
			same++
		}
	}
	return s, f, same
}

// importOne converts sentinel-golang rules the way a user would (JSON, as
// its datasources store them, through rules/sentinel) and loads them.
func importOne(eng *flow.Engine, srcRules any) (sentinel.Report, error) {
	data, err := json.Marshal(srcRules)
	if err != nil {
		return sentinel.Report{}, err
	}
	res, err := sentinel.Import([]sentinel.File{{Name: "rules.json", Data: data}}, sentinel.Options{})
	if err != nil {
		return sentinel.Report{}, err
	}
	if res.Cannot() > 0 {
		return res.Reports[0], fmt.Errorf("import: %v", res.Reports)
	}
	return res.Reports[0], eng.LoadRules(res.Document.Rules())
}

// exitQueue holds admitted calls until their hold ends.
type pending struct {
	at   time.Time
	fail bool
	sg   *base.SentinelEntry
	fg   flow.Permit
}
type exitQueue []pending

func (q exitQueue) Len() int           { return len(q) }
func (q exitQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q exitQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *exitQueue) Push(x any)        { *q = append(*q, x.(pending)) }
func (q *exitQueue) Pop() any {
	old := *q
	p := old[len(old)-1]
	*q = old[:len(old)-1]
	return p
}

// run plays trace on both engines for resource, from the clock's current
// time: before each call, the exits due by then happen on both.
func run(clk *vclock, eng *flow.Engine, resource string, trace []call) outcome {
	start := clk.Now()
	var q exitQueue
	var o outcome
	for _, c := range trace {
		t := start.Add(c.at)
		q.exitUntil(clk, t)
		clk.advanceTo(t)
		clk.slept.Store(0)
		var sg *base.SentinelEntry
		var blk *base.BlockError
		var d flow.Decision
		if c.arg != "" {
			sg, blk = sapi.Entry(resource, sapi.WithTrafficType(base.Inbound), sapi.WithAttachment(paramKey, c.arg))
			d = eng.Decide(resource, flow.WithParam(paramKey, c.arg))
		} else {
			sg, blk = sapi.Entry(resource, sapi.WithTrafficType(base.Inbound))
			d = eng.Decide(resource)
		}
		sOK, fOK := blk == nil, d.Allowed
		var sw, fw time.Duration
		if sOK && fOK {
			sw, fw = time.Duration(clk.slept.Load()), d.Permit.Waited()
		}
		o.count(sOK, fOK, sw, fw)
		if sOK || fOK {
			p := pending{at: t.Add(c.hold), fail: c.fail}
			if sOK {
				p.sg = sg
			}
			if fOK {
				p.fg = d.Permit
			}
			heap.Push(&q, p)
		}
	}
	if len(trace) > 0 {
		end := start.Add(trace[len(trace)-1].at)
		q.exitUntil(clk, end.Add(time.Hour))
		o.Seconds = math.Max(1, trace[len(trace)-1].at.Seconds())
	}
	return o
}

// count adds one call to o: whether each engine admitted it and, when
// both did, the wait each gave it.
func (o *outcome) count(sOK, fOK bool, sw, fw time.Duration) {
	if sOK && fOK {
		o.BothOK++
		if sw > 0 || fw > 0 {
			o.Queued++
		}
		if sw == fw {
			o.SameWait++
		}
	}
	o.Calls++
	if sOK == fOK {
		o.Same++
	}
	if sOK {
		o.SentinelOK++
	}
	if fOK {
		o.FlowgateOK++
	}
}

// exitUntil ends, on both engines, the calls whose hold ends by t, in
// order, each at its own time on clk; a failed call exits with an error.
func (q *exitQueue) exitUntil(clk *vclock, t time.Time) {
	for q.Len() > 0 && !(*q)[0].at.After(t) {
		p := heap.Pop(q).(pending)
		clk.advanceTo(p.at)
		if p.sg != nil {
			if p.fail {
				sapi.TraceError(p.sg, errCall)
			}
			p.sg.Exit()
		}
		if p.fail { // a zero fg (no flowgate call) exits nothing
			p.fg.Exit(flow.WithError(errCall))
		} else {
			p.fg.Exit()
		}
	}
}

// Traces. Each is deterministic (fixed seeds) and starts at offset from
// the clock's current time.

// steady: rate calls per second, evenly spaced, for d.
func steady(rate float64, d, offset time.Duration) []call {
	var out []call
	step := time.Duration(float64(time.Second) / rate)
	for t := offset; t < d+offset; t += step {
		out = append(out, call{at: t})
	}
	return out
}

// poisson: random arrivals at rate per second for d, hold exponential with
// mean hold (0: none).
func poisson(seed uint64, rate float64, d, hold time.Duration) []call {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []call
	for t := time.Duration(0); ; {
		t += time.Duration(r.ExpFloat64() / rate * float64(time.Second))
		if t >= d {
			return out
		}
		c := call{at: t}
		if hold > 0 {
			c.hold = time.Duration(r.ExpFloat64() * float64(hold))
		}
		out = append(out, c)
	}
}

// bursts: n calls at once every gap, k times (idle between).
func bursts(n, k int, gap, offset time.Duration) []call {
	var out []call
	for i := range k {
		for range n {
			out = append(out, call{at: offset + time.Duration(i)*gap})
		}
	}
	return out
}

// hotCold: Poisson arrivals at rate per second for d; 60% carry the hot
// value "hot", 20% "vip" (a specific item), 20% one of 50 cold values.
func hotCold(seed uint64, rate float64, d time.Duration) []call {
	out := poisson(seed, rate, d, 0)
	r := rand.New(rand.NewPCG(seed, 2))
	for i := range out {
		switch p := r.Float64(); {
		case p < 0.6:
			out[i].arg = "hot"
		case p < 0.8:
			out[i].arg = "vip"
		default:
			out[i].arg = fmt.Sprintf("cold-%d", r.IntN(50))
		}
	}
	return out
}

// halfFailing: rate calls per second for d, each holding hold; inside the
// spans every other call fails, so the error ratio sits on 0.5.
func halfFailing(rate float64, d, hold time.Duration, spans [][2]time.Duration) []call {
	out := faulty(rate, d, hold, spans, true, 0)
	for i := range out {
		if i%2 == 1 {
			out[i].fail = false
		}
	}
	return out
}

// faulty: rate calls per second for d, each holding hold; calls that
// start inside one of the spans fail (fail) or hold slow instead.
func faulty(rate float64, d, hold time.Duration, spans [][2]time.Duration, fail bool, slow time.Duration) []call {
	out := steady(rate, d, 0)
	for i := range out {
		out[i].hold = hold
		for _, sp := range spans {
			if out[i].at >= sp[0] && out[i].at < sp[1] {
				if fail {
					out[i].fail = true
				} else {
					out[i].hold = slow
				}
			}
		}
	}
	return out
}

// share: rate calls per second for d, each holding hold; of the calls that
// start inside span, those whose index i (from the trace's start) has
// bad(i) fail, or hold slow instead when slow > 0.
func share(rate float64, d, hold time.Duration, span [2]time.Duration, slow time.Duration, bad func(i int) bool) []call {
	out := steady(rate, d, 0)
	for i := range out {
		out[i].hold = hold
		if out[i].at < span[0] || out[i].at >= span[1] || !bad(i) {
			continue
		}
		if slow > 0 {
			out[i].hold = slow
		} else {
			out[i].fail = true
		}
	}
	return out
}
