package flow

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// Engine admits or refuses calls to resources according to the rules it
// holds. Build one with NewEngine; it is safe for concurrent use, and needs
// no Close: it starts no goroutine.
type Engine struct {
	cf    config
	rules atomic.Pointer[ruleSet]

	mu    sync.Mutex                // serialises LoadRules and SetAdaptiveFactor
	stats map[string]*resourceStats // under mu; every resource that had rules

	// mono reads the clock: the clock itself when it is Monotonic, else
	// an adapter (wallNanos), so that now is one interface call.
	mono clock.Monotonic

	factor   atomic.Uint64 // adaptive factor, float64 bits
	sysLimit atomic.Int64
	// sysInFlight counts the calls admitted while the system guard is on
	// and not yet exited; unruled is its part for resources without rules.
	// Kept apart from the per-resource counts so the guard costs nothing
	// when off.
	sysInFlight atomic.Int64
	unruled     atomic.Int64
	cl          clusterCounters
	calls       sync.Pool     // free call records (see call)
	callSeq     atomic.Uint32 // lanes of new records (see call.lane)
}

type clusterCounters struct {
	passed, blocked, errors  atomic.Uint64
	fbLocal, fbAllow, fbDeny atomic.Uint64
	outage                   outageLog
}

// NewEngine returns an engine with no rules: every call passes until
// LoadRules. Defaults: clock.Real(), no token server, silent, statistics
// over 1s in 10 buckets.
func NewEngine(opts ...Option) *Engine {
	e := &Engine{cf: config{clk: clock.Real(), statsWindow: time.Second, statsBuckets: 10}, stats: map[string]*resourceStats{}}
	for _, o := range opts {
		o(&e.cf)
	}
	if e.cf.clk == nil {
		e.cf.clk = clock.Real()
	}
	switch {
	case e.cf.rtSampling > 0:
		e.cf.rtMask = rtMaskFor(e.cf.rtSampling)
	case e.cf.clk == clock.Real():
		e.cf.rtMask = rtMaskFor(32)
	}
	if m, ok := e.cf.clk.(clock.Monotonic); ok {
		e.mono = m
	} else {
		e.mono = wallNanos{e.cf.clk}
	}
	e.factor.Store(math.Float64bits(1))
	e.rules.Store(&ruleSet{byResource: map[string]*resourceRules{}})
	return e
}

var defaultEngine = sync.OnceValue(func() *Engine { return NewEngine() })

// Default returns the process-wide engine (real clock, no token server)
// used by the package-level Entry. It is created on first use.
func Default() *Engine { return defaultEngine() }

// Entry is shorthand for Default().Entry(resource, opts...).
func Entry(resource string, opts ...EntryOption) (Permit, error) {
	return Default().Entry(resource, opts...)
}

// LoadRules validates every rule (see ValidateRules) and then replaces the
// rules in force with them in one atomic step; when any rule is bad it
// returns every problem and nothing changes. A rule whose id and
// configuration are unchanged keeps its limiter state (and tracked keys),
// so a reload does not hand every client a fresh burst; a changed rule
// starts afresh. Statistics of a resource survive reloads.
func (e *Engine) LoadRules(rules []Rule) error {
	if err := ValidateRules(rules); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	rs, stats, err := e.compile(rules, e.rules.Load(), e.now())
	if err != nil {
		return err
	}
	e.stats = stats
	e.rules.Store(rs)
	return nil
}

// Rules returns a copy of the rules in force, as loaded.
func (e *Engine) Rules() []Rule {
	return copyRules(e.rules.Load().rules)
}

// SetAdaptiveFactor scales the limit of every rule with Adaptive set by f
// (NaN, infinities and f <= 0 are ignored): token buckets change rate with
// Guava's SetRate semantics, the other algorithms scale Limit and keep
// their counts. Limiters pick the change up lazily, at their next use.
// A factor above 1 is the CPU controller's idle-CPU boost: it raises a rule
// up to its BoostLimit when it has one, and never a cluster rule.
func (e *Engine) SetAdaptiveFactor(f float64) {
	if !(f > 0) || math.IsInf(f, 0) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.factor.Store(math.Float64bits(f))
	for _, cr := range e.rules.Load().compiled {
		if cr.rule.Adaptive {
			cr.recompute(f, 0)
		}
	}
}

// AdaptiveFactor returns the factor applied to adaptive rules (1 at start;
// above 1 while the CPU controller's idle-CPU boost is up).
func (e *Engine) AdaptiveFactor() float64 { return math.Float64frombits(e.factor.Load()) }

// SetSystemLimit turns on the system guard: while maxInFlight calls admitted
// since it was turned on are in flight, Entry refuses every call, on every
// resource (Level LevelSystem, Reason ReasonSystemOverload). Calls already
// in flight when it is turned on are not counted by it. 0 (or less) turns
// it off.
func (e *Engine) SetSystemLimit(maxInFlight int64) { e.sysLimit.Store(max(0, maxInFlight)) }

// InFlight reports the calls admitted and not yet exited: calls to
// resources with rules, plus calls to resources without rules admitted
// while the system guard was on. It sums per-resource counters (no lock).
func (e *Engine) InFlight() int64 {
	n := e.unruled.Load()
	for _, st := range e.rules.Load().stats {
		n += st.inFlight()
	}
	return n
}

// Sweep forgets, now, every user and IP idle past its rule's IdleTTL. Entry
// does this lazily; Sweep is for callers who want memory back sooner.
func (e *Engine) Sweep() {
	now := e.now()
	for _, cr := range e.rules.Load().compiled {
		if cr.keys != nil {
			cr.keys.SweepAll(now)
		}
	}
}

// Snapshot returns the engine's statistics. It reads atomics only and never
// blocks Entry (tracked key counts lock each key shard briefly).
func (e *Engine) Snapshot() Snapshot {
	now := e.now()
	rs := e.rules.Load()
	s := Snapshot{
		Time:           e.cf.clk.Now(),
		AdaptiveFactor: e.AdaptiveFactor(),
		SystemLimit:    e.sysLimit.Load(),
		Resources:      make([]ResourceStats, 0, len(rs.stats)),
		Rules:          make([]RuleStats, 0, len(rs.compiled)),
		Cluster: ClusterStats{
			Requests:  map[string]uint64{"passed": e.cl.passed.Load(), "blocked": e.cl.blocked.Load(), "error": e.cl.errors.Load()},
			Fallbacks: map[string]uint64{"local": e.cl.fbLocal.Load(), "allow": e.cl.fbAllow.Load(), "deny": e.cl.fbDeny.Load()},
		},
	}
	for _, st := range rs.stats {
		s.Resources = append(s.Resources, st.read(now))
	}
	for _, cr := range rs.compiled {
		r := &cr.rule
		s.Rules = append(s.Rules, RuleStats{ID: r.ID, Resource: r.Resource, Level: r.Level, Algorithm: r.Algorithm,
			Limit: r.Limit, EffectiveLimit: cr.limit(), Window: r.Window, Keys: cr.keyCount(),
			Adaptive: r.Adaptive, Cluster: r.Cluster != nil, Shadow: cr.shadow.Load(), ShadowBlocked: cr.shadowBlocked.Load(),
			Cost: cr.cost.read(), Owed: owed(cr.global, now)})
		if r.Algorithm == AlgoCircuitBreaker {
			s.Breakers = append(s.Breakers, cr.breakerStats(now))
		}
		if outbound.has(r.Algorithm) {
			o := cr.outboundStats(now)
			s.Rules[len(s.Rules)-1].Outbound = &o
		}
		if as, ok := adaptiveStatsOf(cr.global); ok {
			s.Rules[len(s.Rules)-1].AdaptiveConcurrency = &as
			s.Rules[len(s.Rules)-1].EffectiveLimit = float64(as.Limit)
		}
	}
	return s
}
