package flow

import (
	"context"
	"log/slog"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/internal/hotpath"
	"github.com/flowgate/flowgate/warmup"
)

// Entry asks to enter resource. It returns a Permit to Exit when the call is
// done, or a *BlockError (errors.Is(err, ErrBlocked)) naming the level and
// rule that refused.
//
// Levels are checked IP, then user, then global; at each level every rule
// must pass. Permits taken at one level are given back when a later level
// or rule refuses, so a refused call consumes nothing. A call without
// WithUser (WithIP) is not checked by user (ip) rules. A resource with no
// rule always passes.
//
// When rules grant a queued slot (MaxWait > 0), Entry waits on the engine's
// clock for the longest slot granted, honouring WithContext's context: if it
// is done first, everything taken is given back and Entry returns a
// *BlockError with Reason ReasonWaitCancelled whose Unwrap is ctx.Err(), so
// both errors.Is(err, ErrBlocked) and errors.Is(err, context.Canceled) hold.
//
// The clock is read once per Entry (and by the Exits that measure response
// time, 1 in 8 on the real clock: see WithRTSampling). The pass path
// allocates nothing (Permits are pooled, see Permit.Exit); a refusal
// allocates the *BlockError (Decide refuses without allocating).
func (e *Engine) Entry(resource string, opts ...EntryOption) (*Permit, error) {
	return e.decide(nil, resource, opts, nil)
}

// entry is Entry with the context Guard passes.
func (e *Engine) entry(ctx context.Context, resource string, opts []EntryOption) (*Permit, error) {
	return e.decide(ctx, resource, opts, nil)
}

// takenLim is a local limiter a call took permits from.
type takenLim struct {
	lim  limiter
	at   int64  // the moment the permits were taken for: now, or now+wait when queued
	held holder // lim when it holds permits until Exit (concurrency caps): released then
}

// clusterGrant is a token server answer to give back or release.
type clusterGrant struct {
	req     TokenRequest
	res     TokenResult
	release bool // Release on Exit (concurrency or a lease)
}

// entryState is what one Entry has taken so far; it lives on the stack. The
// taken limiters sit in an array inside it (a slice over a local array would
// escape through the limiter interface calls); past its size they spill to
// a buffer the call's Permit lends (see take).
type entryState struct {
	eng     *Engine
	refusal BlockError // written by refuse (held by value: see decide)
	prio    Priority   // the call's WithPriority, for classed limiters
	now     int64
	tokens  int
	nTaken  int
	taken   [4]takenLim
	more    []takenLim
	// lender is the Permit whose spill buffer more is, fetched at the first
	// spill; it becomes the call's Permit, or goes back to the pool.
	lender   *Permit
	grants   []clusterGrant
	wait     time.Duration
	waitRule *compiledRule
	quota    quotaNote
	// brk are the circuit breakers the call passed (see checkBreakers),
	// in an array for the same reason as taken.
	brk breakerUses
}

// quotaNote is the most restrictive rule seen so far; Permit.Quota expands
// it. Smaller than a Quota, so Entry copies less.
type quotaNote struct {
	cr               *compiledRule // nil: no rule applied
	limit, remaining float64
	reset            time.Duration
}

func (st *entryState) take(t takenLim) {
	if st.nTaken < len(st.taken) {
		st.taken[st.nTaken] = t
		st.nTaken++
		return
	}
	if st.lender == nil {
		// A resource with more local rules than taken holds: the rest go
		// to the spill buffer of the Permit this call will get. Permits
		// are pooled with their buffers, so once warmed a call allocates
		// nothing however many rules it passes.
		st.lender = st.eng.getPermit(st.now)
		st.more = st.lender.spill[:0]
	}
	st.more = append(st.more, t)
}

// permit is the admitted call's Permit: the lender when there is one
// (whose spill buffer the caller then gives back with returnSpill).
func (st *entryState) permit(start int64) *Permit {
	p := st.lender
	if p == nil {
		return st.eng.getPermit(start)
	}
	p.start = start
	return p
}

// returnSpill gives the spill buffer back to its lender, cleared (it must
// not keep limiters alive in the pool).
func (st *entryState) returnSpill() {
	clear(st.more)
	st.lender.spill = st.more[:0]
}

// refused puts the lender, if any, back: the call was refused.
func (st *entryState) refused() {
	if p := st.lender; p != nil {
		st.returnSpill()
		hotpath.StoreUnpublished32(&p.state, permitFree) // never handed out
		st.eng.putPermit(p)
	}
}

func (st *entryState) note(cr *compiledRule, wait time.Duration, remaining float64, reset time.Duration) {
	if wait > st.wait {
		st.wait, st.waitRule = wait, cr
	}
	if st.quota.cr == nil || remaining < st.quota.remaining {
		st.quota = quotaNote{cr: cr, limit: cr.limit(), remaining: remaining, reset: reset}
	}
}

// entryArgs is the parsed form of the EntryOptions of one call.
type entryArgs struct {
	ctx context.Context
	plainArgs
	// params are the call's WithParam values, in order: the first ones in
	// an array (the options slice itself must not be kept: entryArgs'
	// contents reach the heap through the token server and Sleep calls,
	// and would take the caller's variadic array with them), more in a
	// slice. A scan of a few costs less than building a map.
	params  [4]paramArg
	nParams int
	more    []paramArg
}

// parse fills a (zero) from the options of one call. In place: entryArgs
// is some 200 bytes, and returning it by value copied it twice.
func (a *entryArgs) parse(ctx context.Context, opts []EntryOption) {
	a.ctx, a.tokens = ctx, 1
	for i := range opts {
		o := &opts[i]
		switch o.kind {
		case optContext:
			if o.ctx != nil {
				a.ctx = o.ctx
			}
		case optParam:
			if a.nParams < len(a.params) {
				a.params[a.nParams] = paramArg{o.name, o.s}
				a.nParams++
			} else {
				a.more = append(a.more, paramArg{o.name, o.s})
			}
		default: // user, ip, tokens, priority: what plainArgs holds
			a.set(o)
		}
	}
}

// singleArgs is what entrySingle needs of a call's options: its tokens and
// priority. The other options do not concern a resource whose one rule is
// global and never waits.
func singleArgs(opts []EntryOption) (tokens int, prio Priority) {
	tokens = 1
	for i := range opts {
		switch o := &opts[i]; o.kind {
		case optTokens:
			if o.n > 1 {
				tokens = o.n
			}
		case optPriority:
			prio = Priority(o.n)
		}
	}
	return tokens, prio
}

func (a *entryArgs) context() context.Context {
	if a.ctx == nil {
		return context.Background()
	}
	return a.ctx
}

// now reads the engine's clock: once per Entry, and at the Exits that
// measure response time (see WithRTSampling).
func (e *Engine) now() int64 {
	if e.realClock {
		return hotpath.Nanotime()
	}
	if e.mono != nil {
		return e.mono.Nanotime()
	}
	return clock.Nanotime(e.cf.clk)
}

// decide admits the call and returns its Permit, or returns nil and the
// refusal as a *BlockError, written to be (Decide's, on its caller's stack)
// or, when be is nil, to a new one (Entry's error: Entry is then this call
// alone, and inlines).
func (e *Engine) decide(ctx context.Context, resource string, opts []EntryOption, be *BlockError) (*Permit, error) {
	rs := e.rules.Load()
	rr := rs.recently(resource)
	if rr == nil {
		rr = rs.lookupMap(resource)
	}
	if rr == nil {
		return e.decideAll(ctx, resource, rr, opts, be)
	}
	if sys := e.sysLimit.Load(); rr.singleTB == nil || sys > 0 {
		if rr.plain != nil && sys <= 0 { // several plain rules (see decidePlain)
			return e.decidePlain(ctx, resource, rr, opts, be)
		}
		return e.decideAll(ctx, resource, rr, opts, be)
	}
	// The usual one-rule path, a fixed token bucket (see entrySingle),
	// written out here: one call level less. It parses only the options
	// it needs; a low call where the CPU controller sheds goes the long way.
	tokens, prio := singleArgs(opts)
	if prio == PriorityLow && rr.cpuRule != nil {
		return e.decideAll(ctx, resource, rr, opts, be)
	}
	var now int64
	if e.realClock { // e.now() without its call
		now = hotpath.Nanotime()
	} else {
		now = e.now()
	}
	// A rule's own bucket, which calls from every core share (newBucket).
	res, err := rr.singleTB.l.TryReserveAtShared(now, tokens, 0)
	if err != nil || !res.OK {
		return nil, e.refuseTB(resource, rr, &res, err, now, be)
	}
	remaining, reset := rr.singleTB.quota(&res)
	return e.passSingle(rr, now, tokens, remaining, reset), nil
}

// decideAll is decide past the one-rule path: kept apart so that the
// one-rule path's frame is small (this one's holds the parsed options and
// everything the call took).
func (e *Engine) decideAll(ctx context.Context, resource string, rr *resourceRules, opts []EntryOption, be *BlockError) (*Permit, error) {
	sys := e.sysLimit.Load()
	if rr == nil && sys <= 0 {
		return noopPermit, nil
	}
	var a entryArgs
	a.parse(ctx, opts)
	now := e.now()
	if sys > 0 {
		// Take a place first, then check: concurrent callers can never
		// overshoot the limit together.
		if n := e.sysInFlight.Add(1); n > sys || (a.prio < PriorityNormal && n > classCap(sys, sysShares[a.prio+1])) {
			e.sysInFlight.Add(-1)
			if rr != nil {
				rr.stats.block(now, LevelSystem)
			}
			reason := ReasonSystemOverload
			if n <= sys {
				reason = ReasonPriority
			}
			be = refusalIn(be)
			*be = BlockError{Resource: resource, Level: LevelSystem, Reason: reason}
			return nil, be
		}
		if rr == nil {
			e.unruled.Add(1)
			p := e.getPermit(now)
			p.stats, p.tokens, p.waited, p.quota = nil, 0, 0, quotaNote{}
			p.sysCounted, p.unruled, p.extra = true, true, true
			return p, nil
		}
	}
	if a.prio == PriorityLow && rr.cpuRule != nil {
		if err := e.shedLowForCPU(resource, rr, now); err != nil {
			if sys > 0 {
				e.sysInFlight.Add(-1)
			}
			if be != nil { // Decide: the refusal goes in its Block
				*be = *err.(*BlockError)
				return nil, be
			}
			return nil, err
		}
	}
	if rr.single != nil && sys <= 0 {
		return e.entrySingle(resource, rr, now, a.tokens, be)
	}
	// The refusal is written into st, not through be: undo hands what st
	// holds to the token server, so the compiler treats everything st
	// points to as escaping, and be would go to the heap.
	st := entryState{eng: e, now: now, tokens: a.tokens, prio: a.prio}
	if e.admit(&a, resource, rr, &st) != nil {
		st.refused()
		if sys > 0 {
			e.sysInFlight.Add(-1)
		}
		be = refusalIn(be)
		*be = st.refusal
		return nil, be
	}
	if st.wait > 0 {
		if err := e.cf.clk.Sleep(a.context(), st.wait); err != nil {
			if sys > 0 {
				e.sysInFlight.Add(-1)
			}
			e.undo(&st)
			st.refused()
			cr := st.waitRule
			rr.stats.block(now, cr.rule.Level)
			be = refusalIn(be)
			*be = BlockError{Resource: resource, Level: cr.rule.Level, RuleID: cr.rule.ID,
				Reason: ReasonWaitCancelled, Limit: cr.limit(), Window: cr.rule.Window, Err: err}
			return nil, be
		}
	}
	p := st.permit(now + int64(st.wait))
	p.stats = rr.stats
	p.tokens = st.tokens
	p.waited = st.wait
	p.quota = st.quota
	for i := range st.taken[:st.nTaken] { // by index: a takenLim is five words
		if h := st.taken[i].held; h != nil {
			p.held = append(p.held, h)
		}
	}
	if st.lender != nil {
		for _, t := range st.more {
			if t.held != nil {
				p.held = append(p.held, t.held)
			}
		}
		st.returnSpill()
	}
	for _, g := range st.grants {
		if g.release {
			p.grants = append(p.grants, g)
		}
	}
	p.brk = st.brk.appendTo(p.brk)
	p.bucket = rr.stats.pass(now, st.wait, p.lane)
	if rr.observers != nil {
		feedObservers(rr, now, st.tokens)
	}
	p.sysCounted = sys > 0 // the guard counts only while on: it costs nothing when off
	p.extra = p.sysCounted || len(p.held) > 0 || len(p.grants) > 0 || len(p.brk) > 0
	return p, nil
}

// entrySingle is Entry for a resource whose one rule is global, local, a
// rate algorithm and has no MaxWait (resourceRules.single) while the
// system guard is off: one decision, nothing to give back, no wait, nothing
// held, so none of entryState's bookkeeping. It decides exactly as the
// general path does. (decide does the same for a fixed token bucket, the
// usual rule, written out.)
func (e *Engine) entrySingle(resource string, rr *resourceRules, now int64, tokens int, be *BlockError) (*Permit, error) {
	tb := rr.singleTB
	if tb == nil {
		return e.entrySingleAny(resource, rr, now, tokens, be)
	}
	res, err := tb.l.TryReserveAtShared(now, tokens, 0)
	if err != nil || !res.OK {
		return nil, e.refuseTB(resource, rr, &res, err, now, be)
	}
	remaining, reset := tb.quota(&res)
	return e.passSingle(rr, now, tokens, remaining, reset), nil
}

// refuseTB is entrySingle's refusal by its token bucket.
func (e *Engine) refuseTB(resource string, rr *resourceRules, res *warmup.Reservation, err error, now int64, be *BlockError) *BlockError {
	d := rr.singleTB.refusal(res, err)
	return e.refuseSingle(resource, rr, &d, now, be)
}

// entrySingleAny is entrySingle for a rule other than a fixed token bucket.
func (e *Engine) entrySingleAny(resource string, rr *resourceRules, now int64, tokens int, be *BlockError) (*Permit, error) {
	lim, _ := rr.single.limiterFor("", now) // global: never fails
	d := lim.tryAcquire(now, tokens, 0)
	if !d.ok {
		return nil, e.refuseSingle(resource, rr, &d, now, be)
	}
	return e.passSingle(rr, now, tokens, d.remaining, d.reset), nil
}

// refuseSingle counts entrySingle's refusal d and writes it to be (or a
// new BlockError), which it returns.
func (e *Engine) refuseSingle(resource string, rr *resourceRules, d *decision, now int64, be *BlockError) *BlockError {
	be = refusalIn(be)
	blocked(be, resource, rr, rr.single, d, rr.single.reason, now)
	return be
}

// passSingle is entrySingle's Permit for a call rr.single admitted. It
// never waits: the rule has no MaxWait (see singleRule).
func (e *Engine) passSingle(rr *resourceRules, now int64, tokens int, remaining float64, reset time.Duration) *Permit {
	cr := rr.single
	p := e.getPermit(now)
	p.tokens = tokens
	p.waited = 0
	p.quota = quotaNote{cr: cr, limit: cr.limit(), remaining: remaining, reset: reset}
	last := p.bucket // this permit's last call counted there
	if p.stats != rr.stats {
		last, p.stats = nil, rr.stats
	}
	p.bucket = rr.stats.passIn(now, p.lane, last)
	return p
}

// admit takes permits at every level that applies, or gives back what it
// took, writes the first refusal to st.refusal and returns errRefused.
func (e *Engine) admit(a *entryArgs, resource string, rr *resourceRules, st *entryState) error {
	if rr.lists != nil {
		if err := e.checkLists(a, resource, rr, st); err != nil {
			return err
		}
	}
	if rr.refs != nil {
		if err := e.checkRefs(resource, rr, st); err != nil {
			return err
		}
	}
	if rr.breakers != nil {
		if err := e.checkBreakers(a, resource, rr, st); err != nil {
			return err
		}
	}
	for i := range rr.levels {
		lr := &rr.levels[i]
		if lr.empty() {
			continue
		}
		var key string
		switch lr.level {
		case LevelIP:
			if key = a.ip; key == "" {
				continue
			}
		case LevelUser:
			if key = a.user; key == "" {
				continue
			}
		case LevelParam: // a key per rule: its parameter's value
			if err := e.admitParams(a, resource, rr, lr, st); err != nil {
				return err
			}
			continue
		}
		for _, cr := range lr.local {
			if err := e.takeLocal(resource, rr, cr.forKey(key), key, st); err != nil {
				return err
			}
		}
		if len(lr.cluster.crs) == 0 && len(lr.shadowCluster.crs) == 0 {
			continue // no cluster rule at this level: skip the loop's set-up
		}
		for _, g := range [2]*clusterGroup{&lr.cluster, &lr.shadowCluster} {
			if lr.clusterSolo {
				for _, cr := range g.crs {
					if err := e.clusterLevel(a, resource, rr, lr.level, cr.forKey(key).solo, key, st); err != nil {
						return err
					}
				}
			} else if len(g.crs) > 0 {
				if err := e.clusterLevel(a, resource, rr, lr.level, g, key, st); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// takeLocal takes st.tokens permits for key from cr's own limiter (a local
// rule, or a cluster rule falling back to local), noting what it took so
// undo can give it back, or refuses the call (see refuse).
func (e *Engine) takeLocal(resource string, rr *resourceRules, cr *compiledRule, key string, st *entryState) error {
	lim, err := cr.limiterFor(key, st.now)
	if err != nil {
		// Unreachable for validated rules (LoadRules built one); fail open
		// rather than refuse every call.
		e.logError("flow: building limiter", err, cr)
		return nil
	}
	var d decision
	if cr.classed {
		d = lim.(classLimiter).tryAcquireClass(st.now, st.tokens, st.prio, cr.shares[st.prio+1])
	} else {
		d = lim.tryAcquire(st.now, st.tokens, cr.rule.MaxWait)
	}
	if !d.ok {
		reason := cr.reason
		if d.shed {
			reason = ReasonPriority
		}
		if key != "" && !cr.shadow.Load() {
			e.recordRefusal(cr, key, st.now) // TopKeys: refusals only, not would-be ones
		}
		return e.refuseOr(resource, rr, cr, d, reason, st) // shadow: nil, nothing taken
	}
	var h holder
	if cr.holds {
		h, _ = lim.(holder)
	}
	st.take(takenLim{lim: lim, at: st.now + int64(d.wait), held: h})
	st.noteUnlessShadow(cr, d.wait, d.remaining, d.reset)
	return nil
}

// errRefused tells admit's callers that the refusal is in st.refusal: a
// static error value (typed error, so returning it converts nothing), so
// refusing allocates nothing.
var errRefused error = errorString("flow: refused")

// refuse gives back everything st took, counts the block, writes the
// refusal to st.refusal and returns errRefused.
func (e *Engine) refuse(resource string, rr *resourceRules, cr *compiledRule, d decision, reason string, st *entryState) error {
	e.undo(st)
	blocked(&st.refusal, resource, rr, cr, &d, reason, st.now)
	return errRefused
}

// refusalIn is where a refusal is written: the caller's be, or a new one.
func refusalIn(be *BlockError) *BlockError {
	if be == nil {
		return new(BlockError)
	}
	return be
}

// blocked counts a refusal at now and writes it to *be. d by pointer: a
// copy of the decision as it was just stored field by field stalls on
// store-to-load forwarding.
func blocked(be *BlockError, resource string, rr *resourceRules, cr *compiledRule, d *decision, reason string, now int64) {
	rr.stats.block(now, cr.rule.Level)
	cr.refused.Add(1) // BlockedByRule
	*be = BlockError{Resource: resource, Level: cr.rule.Level, RuleID: cr.rule.ID, Reason: reason,
		RetryAfter: d.retryAfter, Never: d.never, Limit: cr.limit(), Window: cr.rule.Window, Remaining: d.remaining}
	if d.limit > 0 {
		be.Limit = d.limit
	}
	if d.never {
		be.RetryAfter = Never
	}
}

// undo gives back every permit st took, local and cluster. Each limiter is
// told the moment its permits were taken for (see newLimiter).
func (e *Engine) undo(st *entryState) {
	for _, t := range st.taken[:st.nTaken] {
		t.lim.refund(t.at, st.tokens)
	}
	for _, t := range st.more {
		t.lim.refund(t.at, st.tokens)
	}
	st.brk.cancel()
	for i := range st.grants {
		g := &st.grants[i]
		// A refund: the call never ran, so its rate tokens come back too.
		g.req.Refund = true
		if err := e.cf.ts.Release(context.Background(), g.req, g.res); err != nil {
			e.logError("flow: token server release", err, nil)
		}
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
