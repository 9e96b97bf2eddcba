package flow

import "context"

// The plain path: Entry for a resource whose rules are all local rate
// rules at the ip, user and global levels (a limit per client, per user
// and for everyone, the usual multi-level setup). Such a call can neither
// wait (no MaxWait) nor hold anything until Exit (no concurrency caps),
// and nothing but the rules decides it (no lists, breakers, related
// resources, parameters or token server), so what admit's general
// bookkeeping is for — the entryState with its spill buffer, cluster
// grants, breakers and the longest wait — has nothing to do. decidePlain
// keeps only what such a call needs: the limiters it took, to give their
// permits back when a later rule refuses, and the most restrictive quota.
// It decides exactly as the general path does, rule for rule and in the
// same order (checkOrder, then the level's rules as loaded); the shared
// behavioural tests run both (TestPlainPathMatchesGeneral).

// maxPlain is the most rules the plain path takes: what it took sits in an
// array on the stack. A resource with more goes the general way.
const maxPlain = 4

// plainRules is rr's rules in the order admit checks them when every one
// qualifies for decidePlain (see above), else nil. rr.single, when set, is
// cheaper still and takes precedence.
func plainRules(rr *resourceRules) []*compiledRule {
	if rr.breakers != nil || rr.lists != nil || rr.refs != nil || rr.observers != nil || rr.single != nil {
		return nil
	}
	var crs []*compiledRule
	for i := range rr.levels {
		lr := &rr.levels[i]
		if len(lr.cluster.crs) > 0 || len(lr.shadowCluster.crs) > 0 {
			return nil
		}
		if len(lr.local) > 0 && lr.level == LevelParam {
			return nil
		}
		for _, cr := range lr.local {
			if cr.classed || cr.holds || cr.rule.MaxWait > 0 {
				return nil
			}
			for _, it := range cr.items { // an item decides in its rule's place
				if it.classed || it.holds || it.rule.MaxWait > 0 {
					return nil
				}
			}
			crs = append(crs, cr)
		}
	}
	if len(crs) == 0 || len(crs) > maxPlain {
		return nil
	}
	return crs
}

// plainKeyed reports whether the first of crs (an ip or user rule when
// there is one: checkOrder) keeps a table of keys whose index slot
// decidePlain can prefetch: no per-value exceptions pick another rule
// first.
func plainKeyed(crs []*compiledRule) bool {
	return len(crs) > 0 && crs[0].keys != nil && crs[0].items == nil
}

// plainArgs is what decidePlain needs of a call's options (and what
// entryArgs holds of them besides its context and parameters).
type plainArgs struct {
	user, ip string
	tokens   int
	prio     Priority
}

func (a *plainArgs) parse(opts []EntryOption) {
	a.tokens = 1
	for i := range opts {
		a.set(&opts[i])
	}
}

// levelKey is the key the call's rules at level l (ip, user or global)
// decide on: "" at the global level, and "" too when the call gave none
// (no WithIP, no WithUser), where the level's rules do not apply to it.
func (a *plainArgs) levelKey(l Level) string {
	switch l {
	case LevelIP:
		return a.ip
	case LevelUser:
		return a.user
	}
	return ""
}

// set records o when it is an option plainArgs holds (a.tokens starts at 1).
func (a *plainArgs) set(o *EntryOption) {
	switch o.kind {
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
	}
}

// decidePlain is decide for a resource with rr.plain (the system guard
// off). It takes decideAll's arguments, in the same order, though it never
// waits on ctx: decide then calls either with its registers as they are.
func (e *Engine) decidePlain(_ context.Context, resource string, rr *resourceRules, opts []EntryOption, be *BlockError) (*Permit, error) {
	var a plainArgs
	a.parse(opts)
	var early *Permit
	now := e.now()
	if a.prio == PriorityLow && rr.cpuRule != nil {
		if err := e.shedLowForCPU(resource, rr, now); err != nil {
			if early != nil {
				e.ungetPermit(early)
			}
			if be != nil { // Decide: the refusal goes in its Block
				*be = *err.(*BlockError)
				return nil, be
			}
			return nil, err
		}
	}
	var taken [maxPlain]limiter
	nTaken := 0
	var q quotaNote
	for _, cr := range rr.plain {
		key := a.levelKey(cr.rule.Level)
		if key == "" && cr.keyed { // a level the call gave no key for
			continue
		}
		cr = cr.forKey(key)
		lim, err := cr.limiterFor(key, now)
		if err != nil { // as takeLocal: unreachable for validated rules, fail open
			e.logError("flow: building limiter", err, cr)
			continue
		}
		d := lim.tryAcquire(now, a.tokens, 0)
		shadow := cr.shadow.Load()
		if !d.ok {
			if shadow { // counted, nothing taken, the call goes on
				e.shadowRefused(resource, cr, cr.reason)
				continue
			}
			if key != "" {
				e.recordRefusal(cr, key, now)
			}
			for _, l := range taken[:nTaken] {
				l.refund(now, a.tokens)
			}
			if early != nil {
				e.ungetPermit(early)
			}
			be = refusalIn(be)
			blocked(be, resource, rr, cr, &d, cr.reason, now)
			return nil, be
		}
		taken[nTaken] = lim
		nTaken++
		if !shadow && (q.cr == nil || d.remaining < q.remaining) {
			q = quotaNote{cr: cr, limit: cr.limit(), remaining: d.remaining, reset: d.reset}
		}
	}
	return e.passPlain(rr, now, a.tokens, &q, early), nil
}

// passPlain is decidePlain's Permit, q its quota: passSingle's lines for a
// quota the caller built, on the permit taken early when there is one.
// (passSingle calling this instead, or both taking the quota as values,
// counted 5 and 45 instructions more per call.)
func (e *Engine) passPlain(rr *resourceRules, now int64, tokens int, q *quotaNote, early *Permit) *Permit {
	p := early
	if p == nil {
		p = e.getPermit(now)
	} else {
		p.start = now
	}
	p.tokens = tokens
	p.waited = 0
	p.quota = *q
	last := p.bucket // this permit's last call counted there (see passSingle)
	if p.stats != rr.stats {
		last, p.stats = nil, rr.stats
	}
	p.bucket = rr.stats.passIn(now, p.lane, last)
	return p
}
