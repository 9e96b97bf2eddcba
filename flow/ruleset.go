package flow

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow/internal/algo"
)

// ruleSet is an immutable snapshot of the rules in force, published with an
// atomic.Pointer: Entry loads it once and never locks.
type ruleSet struct {
	rules      []Rule // as loaded (a copy)
	compiled   []*compiledRule
	byResource map[string]*resourceRules
	stats      []*resourceStats // every resource that has or had rules, by name
}

// compiledRule is one rule with its limiter state. It survives a reload that
// leaves the rule unchanged, so clients keep their state.
type compiledRule struct {
	rule    Rule   // defaults applied
	seed    uint64 // the engine's seed for client throttles (withSeed); 0: none
	clk     clock.Clock
	keyed   bool
	cluster bool // decided by a token server (one is configured)
	// refusers describe this rule's refusals (see refuser), shared by
	// every BlockError it returns; the first is for its own reason.
	refusers []Refuser
	// classed: the limiter holds permits in flight and honours priority
	// (concurrency, adaptive_concurrency): Entry asks it through
	// algo.ClassLimiter and Exit releases it.
	classed bool
	// holds: the algorithm's limiters are holders (concurrency caps, the
	// cluster ones' local fallback too), known here so that takeLocal asks
	// no type assertion of the others.
	holds bool
	// learns: the algorithm's limiters learn from response times
	// (adaptive_concurrency), so a call holding one is always measured at
	// Exit (see call.rtWeight).
	learns bool
	shares [numPriorities]float64 // of the limit each class may fill, low first (see Reserve)
	// gen counts changes of the effective limit; a limiter whose recorded
	// generation differs is set to limit() before use. One atomic load per
	// rule on the hot path; the change itself is applied lazily.
	gen       atomic.Uint64
	limitBits atomic.Uint64 // effective local limit, float64 bits
	dynamic   bool          // the limit can change: adaptive or cluster share

	mu        sync.Mutex // serialises limit changes
	instances int        // instance count the cluster share was computed for

	global    limiter // LevelGlobal
	globalGen atomic.Uint64
	keys      *keyTable // LevelUser, LevelIP, LevelParam
	proto     atomic.Pointer[bucketProto]
	top       atomic.Pointer[topKeys] // refused keys, from the first refusal (keys.go)
	refused   atomic.Uint64           // calls this rule refused (rule_blocks.go)
	cost      costStats               // settlements at Exit (cost.go)
	out       outboundStats           // a retry_budget's attempts (outbound.go)
	// items are a keyed rule's per-value exceptions, each a rule of its
	// own with one limiter (param.go); nil when it has none.
	items map[string]*compiledRule
	// list is an allow or deny rule's values (lists.go).
	list *valueList
	// solo holds this rule alone, for the token server, when it is a
	// cluster rule or one of its items (param.go, checks.go).
	solo *clusterGroup
	// parent is an item's rule (param.go), nil for a rule: a shadow item's
	// would-be refusals are counted on its rule.
	parent *compiledRule

	// transitions counts a circuit breaker rule's changes into each state.
	transitions [numBreakerStates]atomic.Uint64
	// fallbackPassed is the engine's count of answered token server calls
	// at this cluster rule's latest local fallback call (see
	// fallbackResumes); it starts at MaxUint64 so the first outage drains.
	fallbackPassed atomic.Uint64
	// For a global fixed_window cluster rule with the local fallback (see
	// staysLocal): stayWin is the latest window in which Redis showed it
	// lost its count (math.MinInt64: none), redisTally the window and count
	// of what Redis admitted to this instance (see answered).
	stayWin    atomic.Int64
	redisTally atomic.Uint64
	// seen is the latest Entry time a circuit breaker rule saw, to
	// seenStep: its Exits' time when they do not read the clock.
	seen atomic.Int64

	// shadow is Rule.Shadow, kept apart from rule so that a reload which
	// only flips it keeps the rule's state (see ruleEqual): the limiter a
	// shadow rule filled is the one that starts enforcing.
	shadow atomic.Bool
	// shadowBlocked counts the calls the rule would have refused in shadow.
	shadowBlocked atomic.Uint64
}

func (cr *compiledRule) limit() float64 { return math.Float64frombits(cr.limitBits.Load()) }

func (cr *compiledRule) newLimiter(now int64) (limiter, error) {
	p, lim, err := cr.protoOrLimiter(now)
	if p != nil {
		return p.Clone(), nil
	}
	return lim, err
}

// initKey fills en, a new key's entry, with a new limiter at the current
// limit. The generation is read first, so that a limit changed meanwhile
// is applied on the key's next call (refreshKey).
func (cr *compiledRule) initKey(en *keyEntry, now int64) error {
	g := keyGen(cr)
	lim, err := cr.newLimiter(now)
	if err != nil {
		return err
	}
	en.lim = lim
	en.gen.Store(g)
	return nil
}

// initBucketKey is initKey for a token-bucket rule: the key's bucket, a
// clone of the rule's prototype, is made in the entry itself.
func (cr *compiledRule) initBucketKey(en *bucketKey, now int64) error {
	g := keyGen(cr)
	p, _, err := cr.protoOrLimiter(now)
	if err != nil {
		return err
	}
	if p == nil { // the rule's table holds buckets only when its limiter is one
		return fmt.Errorf("flow: rule %q: no token bucket to clone for a key", cr.rule.ID)
	}
	p.CloneInto(&en.tb)
	en.gen.Store(g)
	return nil
}

// protoOrLimiter returns, for a keyed token-bucket rule, the prototype its
// keys are cloned from at the current limit (built when there is none at
// this limit); for any other rule, a new limiter at that limit.
func (cr *compiledRule) protoOrLimiter(now int64) (*algo.Bucket, limiter, error) {
	limit := cr.limit()
	if p := cr.proto.Load(); p != nil && p.limit == limit {
		return p.tb, nil, nil
	}
	lim, err := newLimiter(&cr.rule, limit, cr.clk, now)
	if err != nil {
		return nil, nil, err
	}
	if t, ok := lim.(*algo.Throttle); ok && cr.seed != 0 {
		t.Reseed(cr.seed)
	}
	if tb, ok := lim.(*algo.Bucket); ok && cr.keyed {
		// This bucket becomes the rule's prototype, which never admits a
		// call. Racing builders each store theirs: any one will do.
		cr.proto.Store(&bucketProto{tb: tb, limit: limit})
		return tb, nil, nil
	}
	return nil, lim, nil
}

// bucketProto is the token bucket the keys of a user or ip rule are cloned
// from at one effective limit, so they share its rate data. It is never
// used to admit calls (its rate must not change).
type bucketProto struct {
	tb    *algo.Bucket
	limit float64
}

// recompute sets the effective limit from the factor and the instance count.
func (cr *compiledRule) recompute(factor float64, instances int) {
	// The local cluster fallback calls this per call: when the limit
	// would not change, return without the lock.
	if instances > 0 && math.Float64bits(cr.limitFor(factor, instances)) == cr.limitBits.Load() {
		return
	}
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if instances > 0 {
		cr.instances = instances
	}
	l := cr.limitFor(factor, cr.instances)
	if math.Float64bits(l) != cr.limitBits.Load() {
		cr.limitBits.Store(math.Float64bits(l))
		cr.gen.Add(1)
	}
	// Items scale as their rule does: when the rule's limit is unchanged
	// (the early return above), so are theirs.
	for _, it := range cr.items {
		it.recompute(factor, instances)
	}
}

// boosted is the factor applied to the rule: a factor above 1 (the
// idle-CPU boost) never raises a cluster rule, whose limit other instances
// share, and raises the limit to BoostLimit at most.
func (cr *compiledRule) boosted(factor float64) float64 {
	if factor <= 1 {
		return factor
	}
	if cr.cluster {
		return 1
	}
	if b := cr.rule.BoostLimit; b > 0 {
		return max(1, min(factor, b/cr.rule.Limit))
	}
	return factor
}

// limitFor is the effective limit at factor and an instance count.
func (cr *compiledRule) limitFor(factor float64, instances int) float64 {
	l := cr.rule.Limit
	if cr.cluster && cr.rule.Cluster.Threshold == "global" && instances > 1 {
		l /= float64(instances)
	}
	if cr.rule.Adaptive {
		l *= cr.boosted(factor)
	}
	if cr.rule.Algorithm == AlgoConcurrency {
		l = math.Max(1, math.Floor(l)) // a scaled cap stays a whole number >= 1
	}
	if cr.rule.Algorithm == AlgoAdaptiveConcurrency {
		l = float64(cr.rule.InitialLimit) // the limiter owns its limit (see AdaptiveStats)
	}
	return l
}

// limiterFor returns the limiter for key ("" at the global level).
func (cr *compiledRule) limiterFor(key string, now int64) (limiter, error) {
	if cr.keys != nil {
		return cr.keyLimiter(key, now)
	}
	return cr.globalLimiter(now), nil
}

// globalLimiter is the limiter of a rule without keys (or of an item),
// set to the effective limit when that changed since it was last set (see
// gen).
func (cr *compiledRule) globalLimiter(now int64) limiter {
	if cr.dynamic {
		cr.refreshGlobal(now)
	}
	return cr.global
}

// refreshGlobal sets the global limiter to the effective limit when its
// generation moved on since the limiter was last set.
func (cr *compiledRule) refreshGlobal(now int64) {
	if g := cr.gen.Load(); cr.globalGen.Load() != g {
		cr.global.SetLimit(now, cr.limit())
		cr.globalGen.Store(g)
	}
}

func (cr *compiledRule) keyCount() int {
	if cr.keys == nil {
		return 0
	}
	return cr.keys.Len()
}

// ruleEqual reports whether a and b configure the same state, comparing
// them deeply (cluster spec, reserve, items, values): only on reload, so
// reflection's cost does not matter. Shadow is not part of it
// (compiledRule.shadow).
func ruleEqual(a, b *Rule) bool {
	x, y := *a, *b
	x.Shadow, y.Shadow = false, false
	return reflect.DeepEqual(x, y)
}

// compile builds the snapshot for rules (already validated), reusing the
// compiled state of every rule of old whose configuration is unchanged.
// stats is the engine's per-resource statistics; compile adds to a copy.
func (e *Engine) compile(rules []Rule, old *ruleSet, now int64) (*ruleSet, map[string]*resourceStats, error) {
	reuse := map[string][]*compiledRule{}
	if old != nil {
		for _, cr := range old.compiled {
			reuse[cr.rule.ID] = append(reuse[cr.rule.ID], cr)
		}
	}
	stats := make(map[string]*resourceStats, len(e.stats)+1)
	for k, v := range e.stats {
		stats[k] = v
	}
	rs := &ruleSet{rules: copyRules(rules), byResource: map[string]*resourceRules{}}
	plans := map[string]*resourcePlan{}
	factor := e.AdaptiveFactor()
	var errs []error
	for i := range rules {
		r := rules[i].WithDefaults()
		cr := takeReusable(reuse, &r)
		if cr == nil {
			var err error
			if cr, err = e.newCompiled(r, factor, now); err != nil {
				errs = append(errs, &RuleError{Index: i, ID: r.ID, Msg: err.Error(), cause: err})
				continue
			}
		}
		// Never cr.rule.Shadow: a reused rule is read by Entries on the
		// old snapshot meanwhile (and its rule by the token server).
		cr.setShadow(r.Shadow)
		rs.compiled = append(rs.compiled, cr)
		if rs.byResource[r.Resource] == nil {
			st := stats[r.Resource]
			if st == nil {
				st = newResourceStats(r.Resource, e.cf.statsWindow, e.cf.statsBuckets)
				stats[r.Resource] = st
			}
			rs.byResource[r.Resource] = newResourceRules(r.Resource, st)
			plans[r.Resource] = &resourcePlan{}
		}
		plans[r.Resource].add(cr)
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	for name, p := range plans {
		rr := rs.byResource[name]
		rr.checks, rr.cpuRule = p.checks(), p.cpuRule()
	}
	rs.linkRefs(stats, e.cf.statsWindow, e.cf.statsBuckets)
	for _, st := range stats {
		rs.stats = append(rs.stats, st)
	}
	sort.Slice(rs.stats, func(i, j int) bool { return rs.stats[i].name < rs.stats[j].name })
	return rs, stats, nil
}

// takeReusable removes and returns a compiled rule of the old snapshot with
// the same id and configuration, or nil.
func takeReusable(reuse map[string][]*compiledRule, r *Rule) *compiledRule {
	list := reuse[r.ID]
	for i, cr := range list {
		if ruleEqual(&cr.rule, r) {
			reuse[r.ID] = append(list[:i:i], list[i+1:]...)
			return cr
		}
	}
	return nil
}

func (e *Engine) newCompiled(r Rule, factor float64, now int64) (*compiledRule, error) {
	cr := &compiledRule{
		rule:     r,
		seed:     e.cf.seed,
		clk:      e.cf.clk,
		keyed:    r.Level.keyed(),
		cluster:  r.Cluster != nil && e.cf.ts != nil,
		refusers: newRefusers(&r, reasonOf(r.Algorithm)),
	}
	switch r.Algorithm {
	case AlgoConcurrency, AlgoAdaptiveConcurrency:
		cr.classed = !cr.cluster
		cr.holds = true
		cr.learns = r.Algorithm == AlgoAdaptiveConcurrency // never a cluster rule: validation refuses it
		cr.shares = reserveOf(&r).shares()
	case AlgoCircuitBreaker:
		cr.cluster = false // validation refuses a Cluster spec on a breaker
	case AlgoClientThrottle, AlgoRetryBudget:
		cr.cluster = false // validation refuses a Cluster spec on them
	case AlgoAllow, AlgoDeny:
		return newListRule(cr)
	}
	cr.dynamic = r.Adaptive || cr.cluster
	instances := 1
	if cr.cluster {
		instances = max(1, e.cf.ts.Instances())
	}
	cr.fallbackPassed.Store(math.MaxUint64)
	cr.stayWin.Store(math.MinInt64)
	cr.limitBits.Store(math.Float64bits(math.NaN())) // so recompute always sets it
	cr.recompute(factor, instances)
	cr.gen.Store(0)
	// Build one limiter even for keyed rules: it proves the configuration
	// is accepted now, not at a client's first call.
	lim, err := cr.newLimiter(now)
	if err != nil {
		return nil, err
	}
	if cr.keyed {
		cr.keys = newKeyTable(r.MaxKeys, r.IdleTTL, lim)
	} else {
		cr.global = lim
	}
	if err := e.compileItems(cr, factor, instances, now); err != nil {
		return nil, err
	}
	if cr.cluster { // asked alone when keyed, or when its level has a striped rule
		cr.solo = soloGroup(cr)
	}
	return cr, nil
}

// reasonOf is BlockError.Reason when a rule of algorithm a refuses.
func reasonOf(a Algorithm) string {
	switch a {
	case AlgoConcurrency, AlgoAdaptiveConcurrency:
		return ReasonConcurrency
	case AlgoCircuitBreaker:
		return ReasonBreakerOpen
	case AlgoClientThrottle:
		return ReasonThrottled
	case AlgoRetryBudget:
		return ReasonRetryBudget
	case AlgoAllow:
		return ReasonNotAllowed
	case AlgoDeny:
		return ReasonDenied
	}
	return ReasonRateLimited
}

// copyRules copies rules deeply (cluster specs too): the snapshot must not
// change when the caller reuses its slice.
func copyRules(rules []Rule) []Rule {
	out := make([]Rule, len(rules))
	for i, r := range rules {
		out[i] = r.Clone()
	}
	return out
}
