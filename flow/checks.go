package flow

import (
	"sort"

	"github.com/flowgate/flowgate/flow/internal/algo"
)

// resourceRules is one resource compiled: the checks Entry runs for it, in
// order, and what it feeds. Immutable once published in a ruleSet.
type resourceRules struct {
	name   string
	stats  *resourceStats
	checks []check
	// observers are the RefResource rules of other resources that count
	// this one's passes (refs.go); nil when none.
	observers []*compiledRule
	// cpuRule is the resource's first enforcing rule the CPU controller
	// scales (Adaptive), nil when none: low-priority calls are shed before
	// its checks while the controller cuts (see Engine.keepLowForCPU).
	cpuRule *compiledRule
	// guard describes the system guard's refusals of this resource.
	guard [2]Refuser
}

// newResourceRules is name's rules, with none yet, counted in st.
func newResourceRules(name string, st *resourceStats) *resourceRules {
	return &resourceRules{name: name, stats: st, guard: [2]Refuser{
		{Resource: name, Level: LevelSystem, Reason: ReasonSystemOverload},
		{Resource: name, Level: LevelSystem, Reason: ReasonPriority},
	}}
}

// checkKind is what a check asks.
type checkKind uint8

const (
	listCheck        checkKind = iota // an allow or deny rule: takes nothing
	refCheck                          // a RefResource rule: takes nothing
	breakerCheck                      // a circuit breaker: a probe, given back on refusal
	localCheck                        // a limit decided here: permits, given back on refusal
	clusterCheck                      // a level's cluster rules, asked in one token server request
	clusterRuleCheck                  // one cluster rule asked alone (it or its level has items, or it is a param rule)
	throttleCheck                     // a client_throttle: told the backend's answer at Exit
	budgetCheck                       // a retry_budget: a first attempt deposits, a retry withdraws
)

// check is one step of a resource's admission. Entry runs a resource's
// checks in the order compile put them in:
//
//	allow and deny lists, by level (ip, user, param, global)
//	related resources (RefResource)
//	circuit breakers, keyed before global
//	client throttles, then retry budgets (outbound.go)
//	then for each level, ip, user, param, global (the most specific
//	first, so a flood from one client is refused before it touches the
//	shared quota): its local limits as loaded, then its enforcing cluster
//	rules, then its shadow cluster rules
//
// Lists and related resources take nothing, so they come first; breakers
// come before limits so a call an open breaker refuses takes no permit.
// A shadow rule is an ordinary check that counts its would-be refusal and
// lets the call go on (see deny).
type check struct {
	kind  checkKind
	cr    *compiledRule // every kind but clusterCheck
	group *clusterGroup // clusterCheck
	level Level         // clusterCheck: the level whose key the request carries
}

// run runs one check; false means it refused the call (st.refusal says
// why). opts are the call's options (see keyFor).
func (k *check) run(st *entryState, opts []EntryOption) bool {
	switch k.kind {
	case localCheck:
		if !k.cr.keyed {
			return st.local(k.cr, k.cr.globalLimiter(st.now), "")
		}
		key := st.a.keyFor(&k.cr.rule, opts)
		if key == "" { // the call gave no key for this level
			return true
		}
		return st.localFor(k.cr.forKey(key), key)
	case listCheck:
		return st.list(k.cr, st.a.keyFor(&k.cr.rule, opts))
	case refCheck:
		return st.ref(k.cr)
	case breakerCheck:
		return st.breaker(k.cr, st.a.keyFor(&k.cr.rule, opts))
	case throttleCheck:
		return st.throttle(k.cr, st.a.keyFor(&k.cr.rule, opts))
	case budgetCheck:
		return st.budget(k.cr, st.a.keyFor(&k.cr.rule, opts))
	case clusterCheck:
		key := st.a.levelKey(k.level)
		if key == "" && k.level.keyed() {
			return true
		}
		return st.cluster(k.group, k.level, key)
	case clusterRuleCheck:
		key := st.a.keyFor(&k.cr.rule, opts)
		if key == "" && k.cr.keyed {
			return true
		}
		return st.cluster(k.cr.forKey(key).solo, k.cr.rule.Level, key)
	}
	return true
}

// levelKey is the call's key at level l (ip or user); "" at the global
// level, and at the param level, whose key depends on the rule (keyFor).
func (a *entryArgs) levelKey(l Level) string {
	switch l {
	case LevelIP:
		return a.ip
	case LevelUser:
		return a.user
	}
	return ""
}

// deny refuses the call for cr (st.refusal) and reports false; for a
// shadow rule it counts the would-be refusal instead and reports true:
// the call goes on as if cr had not applied.
func (st *entryState) deny(cr *compiledRule, reason, key string, d algo.Decision) bool {
	if cr.shadow.Load() {
		st.eng.shadowRefused(st.rr.name, cr, reason)
		return true
	}
	// Field by field into the zero refusal (no check refused before): a
	// composite literal would be built on the stack and copied in 16-byte
	// reads of stores still in flight, a stall on every refusal.
	// d refused: its Wait is the time until the call would pass. The
	// limit is the rule's unless the limiter sets its own (see local).
	r := &st.refusal
	r.cr, r.reason, r.key = cr, reason, key
	r.retryAfter, r.never, r.remaining = d.Wait, d.Verdict == algo.Never, d.Remaining
	return false
}

// localFor is local with cr's limiter for key.
func (st *entryState) localFor(cr *compiledRule, key string) bool {
	lim, err := cr.limiterFor(key, st.now)
	if err != nil {
		// Unreachable for validated rules (LoadRules built one); fail open
		// rather than refuse every call.
		st.eng.logError("flow: building limiter", err, cr)
		return true
	}
	return st.local(cr, lim, key)
}

// local takes the call's permits from lim, cr's limiter for key (a local
// rule, or a cluster rule falling back to local), noting them so that a
// later refusal gives them back, or refuses the call.
func (st *entryState) local(cr *compiledRule, lim limiter, key string) bool {
	var d algo.Decision
	if cr.classed {
		d = lim.(algo.ClassLimiter).TryAcquireClass(st.now, st.a.tokens, algo.Priority(st.a.prio), cr.shares[st.a.prio+1])
	} else {
		d = lim.TryAcquire(st.now, st.a.tokens, cr.rule.MaxWait)
	}
	if !d.OK() {
		return st.denyLocal(cr, lim, key, d)
	}
	c := st.rec()
	c.taken = append(c.taken, takenLim{lim: lim, cr: cr, at: st.now + int64(d.Wait)})
	if cr.holds {
		if h, ok := lim.(algo.Holder); ok {
			c.held = append(c.held, h)
			c.learns = c.learns || cr.learns
		}
	}
	st.note(cr, d.Wait, d.Remaining, d.Reset)
	return true
}

// denyLocal is deny for local's refusal d by lim, with the limit of a
// limiter that sets its own (adaptive_concurrency) read after the
// decision: the Decision has no room for it, and a refusal can afford
// the extra call (the limit the controller set since, if it moved, is
// the one a retry meets).
func (st *entryState) denyLocal(cr *compiledRule, lim limiter, key string, d algo.Decision) bool {
	reason := cr.reason()
	if d.Verdict == algo.Shed {
		reason = ReasonPriority
	}
	if st.deny(cr, reason, key, d) {
		return true // a shadow rule: the call goes on
	}
	if own, ok := lim.(algo.OwnLimit); ok {
		st.refusal.limit = own.Limit()
	}
	return false
}

// resourcePlan is a resource's rules sorted by what they check, from which
// compile builds its checks.
type resourcePlan struct {
	lists, refs    []*compiledRule
	keyedBreakers  []*compiledRule // user, ip and param breakers
	globalBreakers []*compiledRule
	throttles      []*compiledRule
	budgets        []*compiledRule
	levels         [4]levelRules // in checkOrder
}

// checkOrder is the order levels are checked in: most specific first.
var checkOrder = [4]Level{LevelIP, LevelUser, LevelParam, LevelGlobal}

func levelSlot(l Level) int {
	for i, c := range checkOrder {
		if c == l {
			return i
		}
	}
	panic("flow: no slot for level " + l.String())
}

type levelRules struct {
	local   []*compiledRule // decided here
	cluster clusterGroup    // enforcing rules decided by the token server
	// shadowCluster are the level's shadow cluster rules, asked in a
	// request of their own so their refusal never refuses the enforcing
	// ones (the token server decides one request all or nothing).
	shadowCluster clusterGroup
	// solo: a cluster rule of the level has items, so its cluster rules
	// are asked one by one, a value's item in place of its rule.
	solo bool
}

// clusterGroup is cluster rules of one level asked in one TokenRequest.
type clusterGroup struct {
	crs   []*compiledRule
	rules []*Rule // the same, as TokenRequest.Rules
	conc  bool    // a cluster concurrency rule: Release on Exit
}

func (g *clusterGroup) add(cr *compiledRule) {
	g.crs = append(g.crs, cr)
	g.rules = append(g.rules, &cr.rule)
	g.conc = g.conc || cr.rule.Algorithm == AlgoConcurrency
}

// add files cr under what it checks.
func (p *resourcePlan) add(cr *compiledRule) {
	r := &cr.rule
	switch {
	case r.Algorithm == AlgoCircuitBreaker && cr.keyed:
		p.keyedBreakers = append(p.keyedBreakers, cr)
	case r.Algorithm == AlgoCircuitBreaker:
		p.globalBreakers = append(p.globalBreakers, cr)
	case r.Algorithm == AlgoClientThrottle:
		p.throttles = append(p.throttles, cr)
	case r.Algorithm == AlgoRetryBudget:
		p.budgets = append(p.budgets, cr)
	case cr.list != nil:
		p.lists = append(p.lists, cr)
	case r.RefResource != "":
		p.refs = append(p.refs, cr)
	default:
		lr := &p.levels[levelSlot(r.Level)]
		switch {
		case cr.cluster && cr.shadow.Load():
			lr.shadowCluster.add(cr)
		case cr.cluster:
			lr.cluster.add(cr)
		default:
			lr.local = append(lr.local, cr)
		}
		// A striped rule is asked alone: its stripe is a key of its own.
		lr.solo = lr.solo || (cr.cluster && (len(r.Items) > 0 || r.Stripes > 1))
	}
}

// checks is the plan as Entry runs it (see check).
func (p *resourcePlan) checks() []check {
	var ks []check
	sort.SliceStable(p.lists, func(i, j int) bool {
		return levelSlot(p.lists[i].rule.Level) < levelSlot(p.lists[j].rule.Level)
	})
	for _, cr := range p.lists {
		ks = append(ks, check{kind: listCheck, cr: cr})
	}
	for _, cr := range p.refs {
		ks = append(ks, check{kind: refCheck, cr: cr})
	}
	for _, cr := range append(p.keyedBreakers[:len(p.keyedBreakers):len(p.keyedBreakers)], p.globalBreakers...) {
		ks = append(ks, check{kind: breakerCheck, cr: cr})
	}
	for _, cr := range p.throttles {
		ks = append(ks, check{kind: throttleCheck, cr: cr})
	}
	for _, cr := range p.budgets {
		ks = append(ks, check{kind: budgetCheck, cr: cr})
	}
	for i := range p.levels {
		lr := &p.levels[i]
		for _, cr := range lr.local {
			ks = append(ks, check{kind: localCheck, cr: cr})
		}
		for _, g := range [2]*clusterGroup{&lr.cluster, &lr.shadowCluster} {
			if lr.solo || checkOrder[i] == LevelParam { // each rule with its own key or item
				for _, cr := range g.crs {
					ks = append(ks, check{kind: clusterRuleCheck, cr: cr})
				}
			} else if len(g.crs) > 0 {
				ks = append(ks, check{kind: clusterCheck, group: g, level: checkOrder[i]})
			}
		}
	}
	return ks
}

// cpuRule is the plan's first enforcing rule the CPU controller scales, or
// nil. A shadow rule never has calls refused for it, low ones included.
func (p *resourcePlan) cpuRule() *compiledRule {
	for i := range p.levels {
		for _, cr := range p.levels[i].local {
			if cr.rule.Adaptive && !cr.shadow.Load() {
				return cr
			}
		}
		for _, cr := range p.levels[i].cluster.crs {
			if cr.rule.Adaptive {
				return cr
			}
		}
	}
	return nil
}
