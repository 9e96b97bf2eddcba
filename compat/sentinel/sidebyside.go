package sentinel

import (
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	sapi "github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/base"

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
	fg   *flow.Permit
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
	drain := func(t time.Time) {
		for q.Len() > 0 && !q[0].at.After(t) {
			p := heap.Pop(&q).(pending)
			clk.advanceTo(p.at)
			if p.sg != nil {
				if p.fail {
					sapi.TraceError(p.sg, errCall)
				}
				p.sg.Exit()
			}
			if p.fg != nil {
				if p.fail {
					p.fg.Exit(flow.WithError(errCall))
				} else {
					p.fg.Exit()
				}
			}
		}
	}
	for _, c := range trace {
		t := start.Add(c.at)
		drain(t)
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
		if sOK && fOK {
			sw, fw := time.Duration(clk.slept.Load()), d.Permit.Waited()
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
		drain(end.Add(time.Hour))
		o.Seconds = math.Max(1, trace[len(trace)-1].at.Seconds())
	}
	return o
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
