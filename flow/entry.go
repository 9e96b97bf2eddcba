package flow

import (
	"context"
	"log/slog"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow/internal/algo"
)

// Entry asks to enter resource. It returns a Permit to Exit when the call is
// done, or a *BlockError (errors.Is(err, ErrBlocked)) naming the level and
// rule that refused.
//
// The resource's rules are checked in one fixed order (see check): allow
// and deny lists, related resources, circuit breakers, then the limits of
// each level, IP, then user, then param, then global; at each level every
// rule must pass. What earlier checks took is given back when a later one
// refuses, so a refused call consumes nothing. A call without WithUser
// (WithIP, WithParam) is not checked by that level's rules. A resource with
// no rule always passes.
//
// When rules grant a queued slot (MaxWait > 0), Entry waits on the engine's
// clock for the longest slot granted, honouring WithContext's context: if it
// is done first, everything taken is given back and Entry returns a
// *BlockError with Reason ReasonWaitCancelled whose Unwrap is ctx.Err(), so
// both errors.Is(err, ErrBlocked) and errors.Is(err, context.Canceled) hold.
//
// The clock is read once per Entry (and by the Exits that measure response
// time: see WithRTSampling). The pass path allocates nothing (call records
// are pooled); a refusal allocates the *BlockError (Decide refuses without
// allocating).
func (e *Engine) Entry(resource string, opts ...EntryOption) (Permit, error) {
	return e.decide(context.Background(), resource, opts, nil)
}

// entryArgs is the parsed form of the EntryOptions of one call.
type entryArgs struct {
	ctx      context.Context
	user, ip string
	tokens   int
	prio     Priority
	retry    bool // WithRetry: a retry_budget takes a retry for the call
	// WithParam values are not copied here: a param rule's check finds its
	// value in the options themselves (see keyFor).
}

// parse fills a (zero) from the options of one call.
func (a *entryArgs) parse(ctx context.Context, opts []EntryOption) {
	a.ctx, a.tokens = ctx, 1
	for i := range opts {
		switch o := &opts[i]; o.kind {
		case optContext:
			if o.ctx != nil {
				a.ctx = o.ctx
			}
		case optUser:
			a.user = o.s
		case optIP:
			a.ip = o.s
		case optTokens:
			if o.n > 1 {
				a.tokens = o.n
			}
		case optPriority:
			a.prio = Priority(o.n)
		case optRetry:
			a.retry = true
		}
	}
}

func (a *entryArgs) context() context.Context {
	if a.ctx == nil {
		return context.Background()
	}
	return a.ctx
}

// keyFor is the call's key for a rule of r's level: "" at the global level
// or when the call did not give it. opts are the call's options, where a
// param rule finds its parameter's value.
func (a *entryArgs) keyFor(r *Rule, opts []EntryOption) string {
	if r.Level == LevelParam {
		return param(opts, r.Param)
	}
	return a.levelKey(r.Level)
}

// now reads the engine's clock: once per Entry, and at the Exits that
// measure response time (see WithRTSampling). Small enough to inline.
func (e *Engine) now() int64 { return e.mono.Nanotime() }

// wallNanos reads a clock that is not clock.Monotonic as clock.Nanotime
// does, in Unix nanoseconds.
type wallNanos struct{ clk clock.Clock }

func (w wallNanos) Nanotime() int64 { return clock.Nanotime(w.clk) }

// entryState is one Entry in progress: the call, its record, and the
// first refusal. It lives on the stack.
type entryState struct {
	eng *Engine
	rr  *resourceRules // nil for a resource with no rule (the system guard's call)
	a   entryArgs      // the call's options, parsed (held by value: see decide)
	// c is the call's record once a check took something to give back or
	// hold (see rec): a call refused before that never takes one.
	c   *call
	now int64
	// sysCounted: counted in Engine.sysInFlight; unruled: in Engine.unruled.
	sysCounted, unruled bool
	wait                time.Duration // the longest queued slot a rule granted
	waitRule            *compiledRule
	refusal             denial // set by the check that refused
}

// denial is what one check refused a call for; refuse turns it into the
// call's BlockError.
type denial struct {
	cr         *compiledRule // the refusing rule; nil for the system guard
	reason     string
	key        string // the call's key at a keyed rule, for TopKeys
	retryAfter time.Duration
	remaining  float64
	limit      float64 // the limiter's own limit (adaptive); 0: the rule's
	err        error   // the context's error of a cancelled wait
	never      bool
}

// decide admits the call and returns its Permit, or a zero Permit and the
// refusal as a *BlockError, written to be (Decide's, on its caller's
// stack) or, when be is nil, to a new one (Entry's error).
func (e *Engine) decide(ctx context.Context, resource string, opts []EntryOption, be *BlockError) (Permit, error) {
	rr := e.rules.Load().byResource[resource]
	sys := e.sysLimit.Load()
	if rr == nil && sys <= 0 {
		return Permit{}, nil
	}
	// The parsed options live inside st, not beside it: st's contents reach
	// the heap (a refusal's resource name, the token server's request), and
	// escape analysis would take anything st points to along. For the same
	// reason st never holds opts; they are passed to each check.
	st := entryState{eng: e, rr: rr}
	st.a.parse(ctx, opts)
	st.now = e.now()
	ok := sys <= 0 || e.admitSystem(&st, sys)
	if ok && rr != nil {
		// rr's checks in their compiled order, to the first refusal
		// (st.refusal); a low-priority call may be shed before them.
		ok = st.a.prio != PriorityLow || rr.cpuRule == nil || e.admitLow(&st)
		for i := 0; ok && i < len(rr.checks); i++ {
			ok = rr.checks[i].run(&st, opts)
		}
	}
	if ok && st.wait > 0 {
		ok = e.queue(&st)
	}
	if !ok {
		return Permit{}, e.refuse(&st, resource, be)
	}
	// Admitted: the record keeps what the call holds until Exit (token
	// server grants too: Exit releases those that hold something and
	// settles all of them on WithActualCost), the pass is counted, and
	// the Permit handed out.
	c := st.rec()
	c.tokens = st.a.tokens
	c.sysCounted, c.unruled = st.sysCounted, st.unruled
	c.waited = st.wait
	if rr == nil {
		c.stats = nil
	} else {
		last := c.bucket // where this record's previous call counted, if in rr's statistics
		if c.stats != rr.stats {
			c.stats, last = rr.stats, nil
		}
		c.bucket = rr.stats.pass(st.now, st.wait, c.lane, last)
		if rr.observers != nil {
			feedObservers(rr, st.now, st.a.tokens)
		}
	}
	c.start = st.now + int64(st.wait)
	return c.permit(), nil
}

// admitLow lets a low-priority call to a resource with a cpuRule go on,
// or refuses it (st.refusal) while the CPU controller sheds low calls
// (see keepLowForCPU).
func (e *Engine) admitLow(st *entryState) bool {
	if e.keepLowForCPU() {
		return true
	}
	cr := st.rr.cpuRule
	st.refusal = denial{cr: cr, reason: ReasonPriority}
	return false
}

// admitSystem takes the call's place under the system guard, which is on
// (sys > 0), or refuses it. The place is taken first, then checked, so
// that concurrent callers never overshoot the limit together.
func (e *Engine) admitSystem(st *entryState, sys int64) bool {
	n := e.sysInFlight.Add(1)
	if n > sys || (st.a.prio < PriorityNormal && n > algo.ClassCap(sys, sysShares[st.a.prio+1])) {
		e.sysInFlight.Add(-1)
		reason := ReasonSystemOverload
		if n <= sys {
			reason = ReasonPriority
		}
		st.refusal = denial{reason: reason} // no rule: the system guard
		return false
	}
	st.sysCounted = true
	if st.rr == nil {
		e.unruled.Add(1)
		st.unruled = true
	}
	return true
}

// queue waits out the longest slot the rules granted (MaxWait), or
// refuses the call when its context is done first.
func (e *Engine) queue(st *entryState) bool {
	err := e.cf.clk.Sleep(st.a.context(), st.wait)
	if err == nil {
		return true
	}
	cr := st.waitRule
	st.refusal = denial{cr: cr, reason: ReasonWaitCancelled, err: err}
	return false
}

// refuse ends a refused call: what it took is given back and its record
// returned to the pool; then the refusal is counted and written, here
// and nowhere else: into the resource's statistics and the rule's count,
// TopKeys for a keyed rule, and *be (a new BlockError when be is nil),
// each field written once, its description the rule's shared Refuser.
func (e *Engine) refuse(st *entryState, resource string, be *BlockError) *BlockError {
	if st.c != nil || st.sysCounted { // took something (unruled implies sysCounted)
		e.undo(st)
	}
	if st.c != nil {
		e.putCall(st.c)
	}
	if be == nil {
		be = new(BlockError)
	}
	r := &st.refusal
	var by *Refuser
	if cr := r.cr; cr != nil {
		cr.refused.Add(1) // BlockedByRule
		if r.key != "" {
			e.recordRefusal(cr, r.key, st.now) // TopKeys: refusals only, not would-be ones
		}
		by = cr.refuser(r.reason)
		if r.limit <= 0 {
			r.limit = cr.limit()
		}
	} else {
		by = st.rr.systemRefuser(resource, r.reason)
	}
	if st.rr != nil {
		st.rr.stats.block(st.now, by.Level)
	}
	if r.never {
		r.retryAfter = Never
	}
	// Every field, one by one (see deny: a composite literal would be
	// copied through the stack).
	be.Refuser, be.RetryAfter, be.Limit = by, r.retryAfter, r.limit
	be.Remaining, be.Never, be.Err = r.remaining, r.never, r.err
	return be
}

// undo gives back everything the call took, local and cluster. Each
// limiter is told the moment its permits were taken for (see newLimiter).
func (e *Engine) undo(st *entryState) {
	if st.sysCounted {
		e.sysInFlight.Add(-1)
		st.sysCounted = false
	}
	if st.unruled {
		e.unruled.Add(-1)
		st.unruled = false
	}
	c := st.c
	if c == nil {
		return
	}
	for _, t := range c.taken {
		t.lim.Refund(t.at, st.a.tokens)
	}
	c.taken = c.taken[:0]
	c.held = c.held[:0] // refunded above with the rest of taken
	for i := range c.brk {
		c.brk[i].b.Cancel(c.brk[i].v)
		c.brk[i] = breakerUse{}
	}
	c.brk = c.brk[:0]
	clear(c.thr) // refunded above with the rest of taken
	c.thr = c.thr[:0]
	for i := range c.grants {
		g := &c.grants[i]
		// A refund: the call never ran, so its rate tokens come back too.
		g.req.Refund = true
		g.tallied.untally(g.at, g.req.Tokens)
		if err := e.cf.ts.Release(context.Background(), g.req, g.res); err != nil {
			e.logError("flow: token server release", err, nil)
		}
		c.grants[i] = clusterGrant{}
	}
	c.grants = c.grants[:0]
}

// rec is the call's record, taken from the pool at the first need, with
// no quota noted yet.
func (st *entryState) rec() *call {
	if st.c == nil {
		st.c = st.eng.getCall()
		st.c.quota, st.c.learns = quotaNote{}, false
	}
	return st.c
}

// note records what an enforcing rule granted, in the call's record (the
// caller took it: see rec): the
// longest wait, and the most restrictive quota (a shadow rule's are not
// the caller's).
func (st *entryState) note(cr *compiledRule, wait time.Duration, remaining float64, reset time.Duration) {
	if cr.shadow.Load() {
		return
	}
	if wait > st.wait {
		st.wait, st.waitRule = wait, cr
	}
	if q := &st.c.quota; q.cr == nil || remaining < q.remaining {
		*q = quotaNote{cr: cr, limit: cr.limit(), remaining: remaining, reset: reset}
	}
}

func (e *Engine) logError(msg string, err error, cr *compiledRule) {
	if e.cf.log == nil {
		return
	}
	if cr != nil {
		e.cf.log.Warn(msg, slog.String("rule", cr.rule.ID), slog.String("resource", cr.rule.Resource), slog.Any("error", err))
		return
	}
	e.cf.log.Warn(msg, slog.Any("error", err))
}
