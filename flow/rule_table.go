package flow

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// The families of algorithms several fields leave out, with the reason
// given to a rule that sets one.
var (
	lists       = algos(AlgoAllow, AlgoDeny)
	notForLists = notFor{lists, "not for allow and deny rules (a list has values, no limit)"}
	notForCB    = notFor{algos(AlgoCircuitBreaker), "not for circuit_breaker rules"}
	neverQueues = notFor{algos(AlgoConcurrency, AlgoAdaptiveConcurrency), "not supported for %v rules (they never queue)"}
	warmAlgos   = algos(AlgoWarmUp, AlgoSentinelWarmUp)
	breakerOnly = algos(AlgoCircuitBreaker)
	adaptOnly   = algos(AlgoAdaptiveConcurrency)
	// outbound are the guards of calls a program makes (outbound.go): no
	// limit, and decided on this instance alone.
	outbound    = algos(AlgoClientThrottle, AlgoRetryBudget)
	notOutbound = notFor{outbound, "not for %v rules"}
	throttle    = algos(AlgoClientThrottle)
	budget      = algos(AlgoRetryBudget)
	// limited are the algorithms that count against a limit.
	limited = allAlgos &^ lists &^ outbound &^ algos(AlgoCircuitBreaker, AlgoAdaptiveConcurrency)
	// settles are the algorithms that settle a call's actual cost at Exit
	// (algo.Settler): the others ignore WithActualCost.
	settles = algos(AlgoTokenBucket, AlgoWarmUp, AlgoLeakyBucket, AlgoFixedWindow, AlgoSlidingWindow, AlgoSlidingLog)
)

// ruleFields is the table of Rule's fields, in the document's order; see
// rule_fields.go.
var ruleFields = []RuleField{
	{Name: "id", Kind: KindString, ptr: func(r *Rule) any { return &r.ID }, algos: allAlgos, levels: allLevels},
	{Name: "resource", Kind: KindString, ptr: func(r *Rule) any { return &r.Resource }, algos: allAlgos, levels: allLevels,
		required: true, always: true, check: checkResource},
	{Name: "refResource", Kind: KindString, ptr: func(r *Rule) any { return &r.RefResource },
		algos: allAlgos &^ lists &^ outbound &^ algos(AlgoCircuitBreaker, AlgoConcurrency), levels: 1 << LevelGlobal,
		not: []notFor{notForLists, {algos(AlgoCircuitBreaker, AlgoConcurrency) | outbound, "only for rate rules, not %v"}}, check: checkRefResource},
	{Name: "level", Kind: KindEnum, ptr: func(r *Rule) any { return &r.Level }, algos: allAlgos, levels: allLevels, always: true,
		check: checkOutboundLevel},
	{Name: "param", Kind: KindString, ptr: func(r *Rule) any { return &r.Param }, algos: allAlgos, levels: 1 << LevelParam,
		check: checkParam},
	{Name: "algorithm", Kind: KindEnum, ptr: func(r *Rule) any { return &r.Algorithm }, algos: allAlgos, levels: allLevels,
		required: true, always: true},
	{Name: "values", Kind: KindList, ptr: func(r *Rule) any { return &r.Values }, algos: lists, levels: allLevels,
		required: true, check: func(r *Rule, bad badFunc) { r.listProblems(bad) }},
	{Name: "allowMissing", Kind: KindBool, ptr: func(r *Rule) any { return &r.AllowMissing }, algos: algos(AlgoAllow), levels: allLevels},
	{Name: "limit", Kind: KindAmount, ptr: func(r *Rule) any { return &r.Limit }, algos: limited, levels: allLevels,
		not: []notFor{notForLists,
			{algos(AlgoCircuitBreaker), "not for circuit_breaker rules (a breaker has threshold, not limit)"},
			{adaptOnly, "does not apply to adaptive_concurrency (it finds its own; see initialLimit)"},
			{outbound, "not for %v rules (they have no limit)"}},
		required: true, check: func(r *Rule, bad badFunc) { badIf(bad, "limit", r.limitProblem(r.Limit)) }},
	{Name: "items", Kind: KindMap, ptr: func(r *Rule) any { return &r.Items }, algos: allAlgos &^ lists &^ breakerOnly &^ outbound,
		levels: keyLevels, not: []notFor{notForLists, notForCB, notOutbound}, check: func(r *Rule, bad badFunc) { r.itemProblems(bad) }},
	{Name: "window", Kind: KindDuration, ptr: func(r *Rule) any { return &r.Window }, algos: allAlgos &^ lists &^ adaptOnly &^ budget,
		levels: allLevels, not: []notFor{notForLists, {adaptOnly, "does not apply to adaptive_concurrency"},
			{budget, "not for retry_budget rules (see ttl)"}},
		implied: []notFor{{algos(AlgoConcurrency), "not supported for concurrency rules (limit is the most calls in flight)"}},
		def:     DefaultWindow, fill: fillWindow, check: checkWindow},
	{Name: "burst", Kind: KindAmount, ptr: func(r *Rule) any { return &r.Burst }, algos: algos(AlgoTokenBucket, AlgoSentinelHotspot),
		levels: allLevels, fill: fillBurst, check: checkBurst},
	{Name: "warmup", Kind: KindDuration, ptr: func(r *Rule) any { return &r.Warmup }, algos: warmAlgos, levels: allLevels,
		check: checkWarmup},
	{Name: "coldFactor", Kind: KindNumber, ptr: func(r *Rule) any { return &r.ColdFactor }, algos: warmAlgos, levels: allLevels,
		def: DefaultColdFactor, check: checkColdFactor},
	{Name: "buckets", Kind: KindInt, ptr: func(r *Rule) any { return &r.Buckets }, algos: algos(AlgoSlidingWindow, AlgoCircuitBreaker),
		levels: allLevels, def: DefaultBuckets, bounds: &bounds{lo: 1, hi: maxBuckets}, check: checkBreakerBuckets},
	{Name: "maxWait", Kind: KindDuration, ptr: func(r *Rule) any { return &r.MaxWait },
		algos: allAlgos &^ lists &^ breakerOnly &^ outbound &^ neverQueues.algos, levels: allLevels,
		not: []notFor{notForLists, notForCB, neverQueues, {outbound, "not for %v rules (they never queue)"}}, unless: maxWaitUnless, always: true, check: checkMaxWait},
	{Name: "maxKeys", Kind: KindInt, ptr: func(r *Rule) any { return &r.MaxKeys }, algos: allAlgos &^ lists, levels: keyLevels,
		not: []notFor{notForLists}, def: DefaultMaxKeys, hi: MaxKeysLimit, check: checkMaxKeys},
	{Name: "idleTTL", Kind: KindDuration, ptr: func(r *Rule) any { return &r.IdleTTL }, algos: allAlgos &^ lists, levels: keyLevels,
		not: []notFor{notForLists}, def: DefaultIdleTTL, check: checkIdleTTL},
	// adaptive_concurrency takes adaptive only as false (Format writes it).
	{Name: "adaptive", Kind: KindBool, ptr: func(r *Rule) any { return &r.Adaptive },
		algos: allAlgos &^ lists &^ breakerOnly &^ outbound, levels: allLevels, not: []notFor{notForLists, notForCB, notOutbound},
		always: true, check: checkAdaptive},
	{Name: "boostLimit", Kind: KindAmount, ptr: func(r *Rule) any { return &r.BoostLimit },
		algos: allAlgos &^ lists &^ breakerOnly &^ outbound &^ adaptOnly, levels: allLevels,
		not:    []notFor{notForLists, notForCB, notOutbound, {adaptOnly, "does not apply to adaptive_concurrency (its limit adapts by itself)"}},
		unless: boostLimitUnless, check: checkBoostLimit},
	{Name: "cluster", Kind: KindObject, ptr: func(r *Rule) any { return &r.Cluster }, algos: allAlgos &^ notClustered, levels: allLevels,
		not: clusterNot, unless: clusterUnless, complete: fillCluster, check: checkCluster},
	{Name: "stripes", Kind: KindInt, ptr: func(r *Rule) any { return &r.Stripes }, algos: stripable, levels: 1 << LevelGlobal,
		not:    []notFor{{allAlgos &^ stripable, "not for %v rules: only token_bucket, fixed_window, sliding_window and sliding_log split into equal shares"}},
		unless: stripesUnless, bounds: &bounds{lo: 1, hi: MaxStripes}, check: checkStripes},
	{Name: "strategy", Kind: KindEnum, ptr: func(r *Rule) any { return &r.Strategy }, algos: breakerOnly, levels: allLevels,
		required: true, check: checkStrategy},
	{Name: "threshold", Kind: KindNumber, ptr: func(r *Rule) any { return &r.Threshold }, algos: breakerOnly, levels: allLevels,
		required: true, check: checkThreshold},
	{Name: "minRequests", Kind: KindInt, ptr: func(r *Rule) any { return &r.MinRequests }, algos: breakerOnly, levels: allLevels,
		def: DefaultMinRequests, bounds: &bounds{lo: 1, hi: maxBreakerCount}},
	{Name: "openFor", Kind: KindDuration, ptr: func(r *Rule) any { return &r.OpenFor }, algos: breakerOnly, levels: allLevels,
		required: true, check: checkOpenFor},
	{Name: "probes", Kind: KindInt, ptr: func(r *Rule) any { return &r.Probes }, algos: breakerOnly, levels: allLevels,
		def: DefaultProbes, bounds: &bounds{lo: 1, hi: MaxProbes}},
	{Name: "slowCall", Kind: KindDuration, ptr: func(r *Rule) any { return &r.SlowCall }, algos: breakerOnly, levels: allLevels,
		unless: slowCallUnless, check: checkSlowCall},
	{Name: "initialLimit", Kind: KindInt, ptr: func(r *Rule) any { return &r.InitialLimit }, algos: adaptOnly, levels: allLevels,
		def: DefaultInitialLimit, bounds: &bounds{lo: 1, hi: math.MaxInt32}},
	{Name: "minLimit", Kind: KindInt, ptr: func(r *Rule) any { return &r.MinLimit }, algos: adaptOnly, levels: allLevels,
		def: DefaultMinLimit, bounds: &bounds{lo: 1, hi: math.MaxInt32}},
	{Name: "maxLimit", Kind: KindInt, ptr: func(r *Rule) any { return &r.MaxLimit }, algos: adaptOnly, levels: allLevels,
		fill: fillMaxLimit, bounds: &bounds{lo: 1, hi: math.MaxInt32}},
	{Name: "tolerance", Kind: KindNumber, ptr: func(r *Rule) any { return &r.Tolerance }, algos: adaptOnly, levels: allLevels,
		def: DefaultTolerance, bounds: &bounds{lo: 1, hi: 100}},
	{Name: "smoothing", Kind: KindNumber, ptr: func(r *Rule) any { return &r.Smoothing }, algos: adaptOnly, levels: allLevels,
		def: DefaultSmoothing, bounds: &bounds{lo: 0, hi: 1, loOpen: true}},
	{Name: "reserve", Kind: KindObject, ptr: func(r *Rule) any { return &r.Reserve },
		algos: algos(AlgoConcurrency, AlgoAdaptiveConcurrency), levels: allLevels, fill: fillReserve,
		check: func(r *Rule, bad badFunc) {
			if r.Reserve != nil {
				r.Reserve.validate(bad)
			}
		}},
	{Name: "maxDebt", Kind: KindAmount, ptr: func(r *Rule) any { return &r.MaxDebt }, algos: settles, levels: allLevels,
		not:   []notFor{{allAlgos &^ settles, "not for %v rules (only token_bucket, warm_up, leaky_bucket, fixed_window, sliding_window and sliding_log settle a call's actual cost)"}},
		check: checkMaxDebt},
	{Name: "k", Kind: KindNumber, ptr: func(r *Rule) any { return &r.K }, algos: throttle, levels: allLevels,
		def: DefaultThrottleK, bounds: &bounds{lo: 1, hi: 1000}},
	{Name: "ratio", Kind: KindNumber, ptr: func(r *Rule) any { return &r.Ratio }, algos: budget, levels: allLevels,
		def: DefaultRetryRatio, bounds: &bounds{lo: 0, hi: 1000, loOpen: true}},
	{Name: "minPerSecond", Kind: KindNumber, ptr: func(r *Rule) any { return &r.MinPerSecond }, algos: budget, levels: allLevels,
		def: DefaultRetryMinPerSecond, bounds: &bounds{lo: 0, hi: 1e6, loOpen: true}},
	{Name: "ttl", Kind: KindDuration, ptr: func(r *Rule) any { return &r.TTL }, algos: budget, levels: allLevels,
		def: DefaultRetryTTL, check: checkTTL},
	{Name: "shadow", Kind: KindBool, ptr: func(r *Rule) any { return &r.Shadow }, algos: allAlgos, levels: allLevels},
}

// The algorithms a cluster spec is refused on, and why: each keeps state
// the token server does not have, or decides on this instance alone.
var (
	notClustered = lists | breakerOnly | adaptOnly | outbound | algos(AlgoSentinelWindow, AlgoSentinelWarmUp, AlgoSentinelHotspot)
	clusterNot   = []notFor{
		{lists, "not for allow and deny rules: lists are decided by each instance"},
		{breakerOnly, "not for circuit_breaker rules: breakers are per instance"},
		{adaptOnly, "not supported for adaptive_concurrency (each instance finds its own limit)"},
		{algos(AlgoSentinelWindow), "not supported for sentinel_window (the token server counts sliding_window)"},
		{algos(AlgoSentinelWarmUp), "not supported for sentinel_warm_up (the token server keeps no Sentinel warm-up state; Sentinel's own cluster flow checker has no warm-up either)"},
		{algos(AlgoSentinelHotspot), "not supported for sentinel_hotspot (the token server keeps no Sentinel hotspot state)"},
		{outbound, "not supported for %v (it guards this instance's own outgoing calls)"},
	}
)

// stripable are the algorithms whose cluster state splits into equal
// independent shares (a count or a rate); warm_up's cold state, a leaky
// bucket's spacing and concurrency permits (released where taken) do not.
var stripable = algos(AlgoTokenBucket, AlgoFixedWindow, AlgoSlidingWindow, AlgoSlidingLog)

// MaxStripes bounds a rule's stripes: enough to spread one rule over the
// masters of any cluster we know of, few enough that each stripe of a
// modest limit still holds whole permits.
const MaxStripes = 64

func stripesUnless(r *Rule) string {
	switch {
	case r.Cluster == nil:
		return "only for cluster rules (a local rule has no Redis key to stripe)"
	case r.Cluster.Threshold == "per_instance":
		return "only for threshold global (a per_instance limit grows with the instances, not over keys)"
	case r.RefResource != "":
		return "not for refResource rules"
	}
	return ""
}

// checkStripes: every stripe holds at least one whole permit.
func checkStripes(r *Rule, bad badFunc) {
	if r.Stripes > 1 && r.Limit > 0 && float64(r.Stripes) > r.Limit {
		bad("stripes", "must be at most limit (%v), so each stripe holds a whole permit, not %d", r.Limit, r.Stripes)
	}
}

// sprintf formats msg with the algorithm when it has a verb for it.
func sprintf(msg string, a Algorithm) string {
	if strings.Contains(msg, "%v") {
		return fmt.Sprintf(msg, a)
	}
	return msg
}

// badIf reports msg as a problem of field unless it is "".
func badIf(bad badFunc, field, msg string) {
	if msg != "" {
		bad(field, "%s", msg)
	}
}

func checkResource(r *Rule, bad badFunc) {
	switch {
	case strings.TrimSpace(r.Resource) == "":
		// A blank name cannot be told apart in logs, metrics or errors.
		bad("resource", "must not be empty or only white space")
	case !utf8.ValidString(r.Resource):
		bad("resource", "must be valid UTF-8, not %q", r.Resource)
	}
}

func checkRefResource(r *Rule, bad badFunc) {
	switch {
	case r.RefResource == "":
	case r.RefResource == r.Resource:
		bad("refResource", "must name another resource than %q", r.Resource)
	case strings.TrimSpace(r.RefResource) == "" || !utf8.ValidString(r.RefResource):
		bad("refResource", "must be a valid resource name, not %q", r.RefResource)
	}
}

func checkParam(r *Rule, bad badFunc) {
	switch {
	case r.Param == "":
		bad("param", "required for param level rules (the name given to flow.WithParam)")
	case len(r.Param) > MaxParamName || !utf8.ValidString(r.Param) || strings.TrimSpace(r.Param) != r.Param:
		bad("param", "must be valid UTF-8, at most %d bytes, without surrounding space, not %q", MaxParamName, r.Param)
	}
}

// checkOutboundLevel keeps the guards of outgoing calls global: one per
// resource (a host, a method), whose state is too large to keep per key.
func checkOutboundLevel(r *Rule, bad badFunc) {
	if outbound.has(r.Algorithm) && r.Level != LevelGlobal {
		bad("level", "%v rules are global only, not %v (give each host or method its own resource)", r.Algorithm, r.Level)
	}
}

// checkTTL keeps a retry_budget's ttl in [10ms, 1h]: shorter, its slots
// would be finer than the clock's use here; longer, a burst of traffic
// would fund retries for an hour.
func checkTTL(r *Rule, bad badFunc) {
	if r.TTL != 0 && (r.TTL < 10*time.Millisecond || r.TTL > time.Hour) {
		bad("ttl", "%v must be within [10ms, 1h]", r.TTL)
	}
}

// fillWindow is a client_throttle's 2m window (Google SRE's), or
// DefaultWindow for the rest.
func fillWindow(r *Rule) {
	switch {
	case r.Window != 0:
	case r.Algorithm == AlgoClientThrottle:
		r.Window = DefaultThrottleWindow
	default:
		r.Window = DefaultWindow
	}
}

func fillBurst(r *Rule) {
	if r.Algorithm == AlgoTokenBucket && r.Burst == 0 {
		r.Burst = r.Limit
	}
}

func checkMaxDebt(r *Rule, bad badFunc) {
	if math.IsNaN(r.MaxDebt) || math.IsInf(r.MaxDebt, 0) || r.MaxDebt < 0 {
		bad("maxDebt", "must be a finite number >= 0 (0: one limit), not %v", r.MaxDebt)
	}
}

func checkBurst(r *Rule, bad badFunc) {
	switch {
	case math.IsNaN(r.Burst) || math.IsInf(r.Burst, 0) || r.Burst < 0:
		bad("burst", "must be a finite number >= 0, not %v", r.Burst)
	case r.Burst > MaxAmount:
		bad("burst", "must be at most %v (flow.MaxAmount), not %v", amountText(MaxAmount), r.Burst)
	case r.Algorithm == AlgoSentinelHotspot && r.Burst != math.Trunc(r.Burst):
		bad("burst", "must be a whole number for sentinel_hotspot (Sentinel's burstCount), not %v", r.Burst)
	}
}

func checkWarmup(r *Rule, bad badFunc) {
	if r.Warmup <= 0 {
		bad("warmup", "must be > 0 for %v rules, not %v", r.Algorithm, r.Warmup)
	}
}

func checkColdFactor(r *Rule, bad badFunc) {
	c := r.ColdFactor
	switch {
	case c == 0:
	case math.IsNaN(c) || math.IsInf(c, 0) || c <= 1:
		bad("coldFactor", "must be a finite number > 1, not %v", c)
	case r.Algorithm == AlgoSentinelWarmUp && (c != math.Trunc(c) || c > math.MaxUint32):
		bad("coldFactor", "must be a whole number for sentinel_warm_up (Sentinel's is an integer), not %v", c)
	}
}

func maxWaitUnless(r *Rule) string {
	if r.RefResource != "" {
		return "not for refResource rules (they decide on traffic that is not theirs to wait for)"
	}
	return ""
}

func checkMaxWait(r *Rule, bad badFunc) {
	if r.MaxWait < 0 {
		bad("maxWait", "must be >= 0, not %v", r.MaxWait)
	} else if r.MaxWait > 0 && r.Algorithm == AlgoSentinelWindow {
		bad("maxWait", "not supported for %v rules", r.Algorithm)
	}
}

func checkMaxKeys(r *Rule, bad badFunc) {
	if r.MaxKeys < 0 {
		bad("maxKeys", "must be >= 0, not %d", r.MaxKeys)
	} else if r.MaxKeys > MaxKeysLimit {
		bad("maxKeys", "must be at most %d, not %d", MaxKeysLimit, r.MaxKeys)
	}
}

func checkIdleTTL(r *Rule, bad badFunc) {
	if r.IdleTTL < 0 {
		bad("idleTTL", "must be >= 0, not %v", r.IdleTTL)
	}
}

func checkAdaptive(r *Rule, bad badFunc) {
	if r.Adaptive && r.Algorithm == AlgoAdaptiveConcurrency {
		bad("adaptive", "does not apply to adaptive_concurrency (its limit adapts by itself)")
	}
}

// boostLimitUnless: only the CPU controller's boost raises a rule, and
// never a cluster rule, whose limit other instances share.
func boostLimitUnless(r *Rule) string {
	switch {
	case r.Cluster != nil:
		return "not for cluster rules (the idle-CPU boost never raises a limit shared with other instances)"
	case !r.Adaptive:
		return `only with "adaptive": true (it caps the CPU controller's idle-CPU boost)`
	}
	return ""
}

func checkBoostLimit(r *Rule, bad badFunc) {
	switch b := r.BoostLimit; {
	case math.IsNaN(b) || math.IsInf(b, 0) || b < 0:
		bad("boostLimit", "must be a finite number >= 0 (0: no cap but the boost factor), not %v", b)
	case b > MaxAmount:
		bad("boostLimit", "must be at most %v (flow.MaxAmount), not %v", amountText(MaxAmount), b)
	case b > 0 && b < r.Limit:
		bad("boostLimit", "must be >= limit %v (the boost only raises a rule), not %v", r.Limit, b)
	}
}

func clusterUnless(r *Rule) string {
	if r.RefResource != "" {
		return "not for refResource rules: they are decided by each instance"
	}
	return ""
}

func fillCluster(r *Rule) {
	if r.Cluster == nil {
		return
	}
	c := *r.Cluster
	if c.Threshold == "" {
		c.Threshold = "global"
	}
	if c.Fallback == "" {
		c.Fallback = "local"
	}
	r.Cluster = &c
}

func checkCluster(r *Rule, bad badFunc) {
	c := r.Cluster
	if c == nil {
		return
	}
	switch c.Threshold {
	case "", "global", "per_instance":
	default:
		bad("cluster.threshold", "must be global or per_instance, not %q", c.Threshold)
	}
	switch c.Fallback {
	case "", "local", "allow", "deny":
	default:
		bad("cluster.fallback", "must be local, allow or deny, not %q", c.Fallback)
	}
}

func fillMaxLimit(r *Rule) {
	if r.MaxLimit == 0 {
		r.MaxLimit = max(DefaultMaxLimit, r.InitialLimit)
	}
}

func fillReserve(r *Rule) {
	res := DefaultReserve
	if r.Reserve != nil {
		res = *r.Reserve
	}
	r.Reserve = &res
}

func slowCallUnless(r *Rule) string {
	if r.Strategy != BreakerSlowRatio {
		return "only for the slow_ratio strategy"
	}
	return ""
}

func checkOpenFor(r *Rule, bad badFunc) {
	if r.OpenFor <= 0 {
		bad("openFor", "required for circuit_breaker rules (> 0), not %v", r.OpenFor)
	}
}

func checkSlowCall(r *Rule, bad badFunc) {
	if r.Strategy == BreakerSlowRatio && r.SlowCall <= 0 {
		bad("slowCall", "required for slow_ratio (> 0), not %v", r.SlowCall)
	}
}
