package flow

import (
	"context"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/flow/internal/algo"
)

// Permit is a call Entry admitted. Exit it once when the call ends; the
// usual form is
//
//	p, err := eng.Entry(resource)
//	if err != nil { return err }
//	defer p.Exit()
//
// A Permit is a small value (copy it freely). Exit ends the call the
// Permit was made for and nothing else: the first Exit of any copy wins,
// and every later one does nothing, even after the engine has reused the
// call's record for another call. The zero Permit (what Entry returns with
// an error, and for a resource with no rule while the system guard is
// off) has nothing to end: its Exit does nothing and Quota reports false.
type Permit struct {
	c   *call
	gen uint64 // c.gen while this Permit's call is in flight
}

// call is the record of one admitted call: what it took, and what Exit
// needs. Records are pooled, so that admitting a call allocates nothing;
// gen tells one use of a record from the next. A Permit remembers the gen
// its call was handed out with, and Exit moves gen on by one with a
// compare-and-swap from that value, which only the first Exit of that call
// can do. gen changes nowhere else: a record goes back to the pool, and out
// again, with the gen its last Exit left, which no earlier Permit of it
// holds.
type call struct {
	gen atomic.Uint64
	eng *Engine
	// lane is where this record's calls count passes and completions
	// (see laneBucket): fixed when the record is made, from a sequence, so
	// records the pool keeps on different Ps mostly count apart.
	lane   uint32
	rng    uint64 // this record's random stream for RT sampling (see sample)
	stats  *resourceStats
	bucket *laneBucket // where Entry counted the pass: an unmeasured Exit counts there
	start  int64
	tokens int
	waited time.Duration
	quota  quotaNote
	// sysCounted: counted in Engine.sysInFlight; unruled: in Engine.unruled.
	sysCounted, unruled bool
	// learns: an adaptive limit the call holds learns from its response
	// time, so Exit measures it whatever the sampling (see rtWeight).
	learns bool
	// taken is what Entry took, so that a refusal can give it back and
	// Exit can settle the call's actual cost; what the call still holds
	// at Exit is also in held, grants and brk. The
	// slices keep their arrays from call to call; what a free record's
	// arrays still point to past their length is never read, and goes with
	// the record when the pool drops it (at most two GC cycles later).
	taken  []takenLim
	held   []algo.Holder  // concurrency caps to release
	grants []clusterGrant // token server grants to release or settle at Exit, or give back on refusal
	brk    []breakerUse   // circuit breakers to tell the outcome
	thr    []throttleUse  // client throttles to tell the backend's answer
}

// takenLim is a local limiter a call took permits from.
type takenLim struct {
	lim limiter
	cr  *compiledRule // the rule it is a limiter of: its MaxDebt, its cost statistics
	at  int64         // the moment the permits were taken for: now, or now+wait when queued
}

// clusterGrant is a token server answer to give back, release or settle.
type clusterGrant struct {
	req     TokenRequest
	res     TokenResult
	release bool // Release on Exit (concurrency or a lease)
	// tallied is the group whose tally counted this grant (a global
	// fixed window: see answered), at the call's moment at: a refund
	// takes it out again.
	tallied *clusterGroup
	at      int64
}

// quotaNote is the most restrictive rule seen so far; Permit.Quota expands it.
type quotaNote struct {
	cr               *compiledRule // nil: no rule applied
	limit, remaining float64
	reset            time.Duration
}

// getCall takes a free record from the pool, or makes one. Its fields
// from an earlier call are overwritten by decide before a Permit is made.
func (e *Engine) getCall() *call {
	c, _ := e.calls.Get().(*call)
	if c == nil {
		c = &call{eng: e, rng: rand.Uint64(), lane: e.callSeq.Add(1)}
	}
	return c
}

// putCall returns c, a record no Permit was made from, to the pool. It
// must hold nothing to release (see undo).
func (e *Engine) putCall(c *call) { e.calls.Put(c) }

// permit is the Permit for the call c now serves.
func (c *call) permit() Permit { return Permit{c: c, gen: c.gen.Load()} }

// Exit ends the call: it releases what the call holds (concurrency
// permits, token server grants), tells its circuit breakers the outcome,
// and records completion, response time (on a sample of calls with the
// real clock: see WithRTSampling) and, with WithError(err) and a non-nil
// err, a failure. Only the first Exit of a call does anything.
func (p Permit) Exit(opts ...ExitOption) {
	c := p.c
	if c == nil || !c.gen.CompareAndSwap(p.gen, p.gen+1) {
		return
	}
	// From here the record is this goroutine's alone: not yet in the
	// pool, so no Entry can hand it out, and no other Exit matches gen.
	e := c.eng
	w := c.rtWeight(e.cf.rtMask)
	measured := w > 0
	var now int64
	if measured {
		now = e.now()
	}
	failed := false
	if len(opts) > 0 || c.holds() {
		failed = c.exitHeld(opts, measured, now)
	}
	c.taken = c.taken[:0]
	if c.stats != nil {
		if measured {
			c.stats.exit(now, now-c.start, w, failed, c.lane, c.bucket)
		} else {
			c.stats.exitUnmeasured(c.bucket, failed)
		}
	}
	e.calls.Put(c)
}

// exactPerLane is how many calls a statistics bucket counts in one lane
// before sampling starts there: below that traffic every call is measured.
const exactPerLane = 8

// rtWeight is how many calls the response time this Exit measures stands
// for, 0 when it measures none (see WithRTSampling): measuring reads the
// clock a second time, so under load only a random 1 in mask+1 calls pays
// for it, each standing for mask+1. Every call is measured,
// standing for itself, when the clock is cheap (mask 0), when an adaptive
// limit learns from it (learns), and while its Entry's lane bucket has
// counted no more than exactPerLane passes, so that light traffic, where
// a sample would be thin, is measured whole. Either way each call's
// expected weight is 1, so the sums stay unbiased.
func (c *call) rtWeight(mask uint32) uint64 {
	switch {
	case c.stats == nil:
		return 0
	case mask == 0 || c.learns || c.bucket.passed.Load() <= exactPerLane:
		return 1
	case c.sample()&mask == 0:
		return uint64(mask) + 1
	}
	return 0
}

// holds reports whether the call has more to end at Exit than its
// statistics: a breaker, a throttle, a held permit or grant, a place under
// the system guard.
func (c *call) holds() bool {
	return len(c.brk) > 0 || len(c.thr) > 0 || len(c.held) > 0 || len(c.grants) > 0 || c.sysCounted
}

// exitHeld is the part of Exit for a call that holds more than its
// statistics or was given options: it settles the actual cost, tells
// breakers and throttles the outcome, releases what the call holds, and
// reports whether the call failed (WithError with a non-nil error).
func (c *call) exitHeld(opts []ExitOption, measured bool, now int64) (failed bool) {
	var settle bool
	var cost int
	for i := range opts {
		failed = failed || opts[i].err != nil
		if opts[i].hasCost {
			settle, cost = true, opts[i].cost
		}
	}
	if settle {
		c.settle(cost)
	}
	if len(c.brk) > 0 {
		c.exitBreakers(failed)
	}
	if len(c.thr) > 0 {
		c.exitThrottles(opts)
	}
	if len(c.held) > 0 || len(c.grants) > 0 {
		c.release(measured, now, settle, cost)
	}
	if e := c.eng; c.sysCounted {
		e.sysInFlight.Add(-1)
		if c.unruled {
			e.unruled.Add(-1)
		}
	}
	c.sysCounted, c.unruled = false, false
	return failed
}

// release lets go of what the call held past Entry: concurrency permits
// (telling adaptive limits the response time when measured) and token
// server grants, each grant in one Release that also settles it at the
// actual cost when settle (grants that hold nothing are only settled).
func (c *call) release(measured bool, now int64, settle bool, actual int) {
	e := c.eng
	for i, l := range c.held {
		l.Release(c.tokens)
		if measured {
			if o, ok := l.(algo.RTTObserver); ok {
				o.Observe(now, now-c.start)
			}
		}
		c.held[i] = nil
	}
	for i := range c.grants {
		g := &c.grants[i]
		if g.release || settle {
			// Not a refund: the call ran, its rate tokens stay spent
			// (settled at the actual cost when settle).
			g.req.Refund, g.req.Settle, g.req.Actual = false, settle, actual
			if settle && actual < g.req.Tokens {
				g.tallied.untally(g.at, g.req.Tokens-actual)
			}
			if err := e.cf.ts.Release(context.Background(), g.req, g.res); err != nil {
				e.logError("flow: token server release", err, nil)
			}
		}
		c.grants[i] = clusterGrant{}
	}
	c.held, c.grants = c.held[:0], c.grants[:0]
}

// sample draws from the record's own random stream (wyrand: a Weyl
// sequence through a 128-bit multiply-fold), seeded from math/rand/v2 when
// the record is made. Only the goroutine that won Exit's compare-and-swap
// calls it, so the state is plain. Which calls are measured depends only on
// this stream, never on the call, so the sampled figures stay unbiased.
func (c *call) sample() uint32 {
	c.rng += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(c.rng, c.rng^0xe7037ed1a0b428db)
	return uint32((hi ^ lo) >> 32)
}

// live reports whether p's call is still in flight (its record not yet
// ended or reused).
func (p Permit) live() bool { return p.c != nil && p.c.gen.Load() == p.gen }

// Quota reports the most restrictive rule that admitted the call (the one
// with the fewest permits left), for rate-limit headers; false when no rule
// applied. Read it before Exit: after Exit it reports false.
func (p Permit) Quota() (Quota, bool) {
	if !p.live() {
		return Quota{}, false
	}
	q := p.c.quota
	if q.cr == nil || !p.live() { // read again: the record may have moved on meanwhile
		return Quota{}, false
	}
	return Quota{RuleID: q.cr.rule.ID, Limit: q.limit, Window: q.cr.rule.Window, Remaining: q.remaining, Reset: q.reset}, true
}

// Waited reports how long Entry queued for a MaxWait slot. Read it before
// Exit: after Exit it reports 0.
func (p Permit) Waited() time.Duration {
	if !p.live() {
		return 0
	}
	return p.c.waited
}

// Quota describes the rule that most restricted a call, for headers.
type Quota struct {
	RuleID    string        // the rule's ID ("" when it has none)
	Limit     float64       // permits per Window, after the adaptive factor
	Window    time.Duration // for concurrency rules, Limit is in flight
	Remaining float64       // permits left at that rule just after this call
	Reset     time.Duration // time until the quota is fully restored or the window resets
}

// Guard runs fn under a permit for resource: it returns the *BlockError
// when the call is refused (fn does not run), and otherwise fn's error,
// recording it and fn's latency at Exit. A panicking fn still exits the
// permit (recorded as a failure) and the panic goes on. ctx bounds any
// MaxWait wait and is passed to fn; a WithContext option overrides it for
// the wait only. With WithFallback, a refused call runs the fallback
// instead and Guard returns its error.
func (e *Engine) Guard(ctx context.Context, resource string, fn func(context.Context) error, opts ...EntryOption) error {
	p, err := e.decide(ctx, resource, opts, nil)
	if err != nil {
		return fallback(ctx, err, opts)
	}
	done := false
	defer func() {
		if !done { // fn panicked or called runtime.Goexit
			p.Exit(WithError(errPanicked))
		}
	}()
	err = fn(ctx)
	done = true
	p.Exit(WithError(err))
	return err
}

// fallback runs the last WithFallback of opts for a refusal (Entry's
// errors are all *BlockError), or returns err.
func fallback(ctx context.Context, err error, opts []EntryOption) error {
	be, ok := err.(*BlockError)
	for i := len(opts) - 1; i >= 0 && ok; i-- {
		if o := &opts[i]; o.kind == optFallback && o.fb != nil {
			return o.fb(ctx, be)
		}
	}
	return err
}

var errPanicked = errorString("flow: guarded function panicked")

type errorString string

func (s errorString) Error() string { return string(s) }
