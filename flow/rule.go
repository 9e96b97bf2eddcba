package flow

import (
	"fmt"
	"time"
)

// Level says whose traffic a rule counts: all callers, one user, one client
// IP, or each value of a named call parameter.
type Level uint8

// The levels. A call is checked most specific first: IP, then user, then
// param, then global. LevelSystem appears only in a BlockError raised by the
// adaptive system guard. LevelParam comes after it so that the numbers of
// the older levels (used as array indexes in snapshots) stay as they were.
const (
	LevelGlobal Level = iota
	LevelUser
	LevelIP
	LevelSystem
	LevelParam
	// NumLevels is the number of levels, for arrays indexed by Level.
	NumLevels
)

var levelNames = [NumLevels]string{"global", "user", "ip", "system", "param"}

// String returns the level's JSON name.
func (l Level) String() string {
	if l < NumLevels {
		return levelNames[l]
	}
	return fmt.Sprintf("Level(%d)", uint8(l))
}

// Algorithm names how a rule admits calls.
type Algorithm uint8

// The algorithms; see the package documentation for when to choose which.
const (
	AlgoTokenBucket    Algorithm = iota // Guava SmoothBursty
	AlgoWarmUp                          // Guava SmoothWarmingUp
	AlgoLeakyBucket                     // constant spacing; with MaxWait it queues (Sentinel's throttling)
	AlgoFixedWindow                     // one counter per window (Unix-epoch aligned); admits up to 2x across a boundary
	AlgoSlidingWindow                   // sub-window counters, previous window weighted by overlap
	AlgoSlidingLog                      // exact: never more than Limit in any span of Window
	AlgoConcurrency                     // at most Limit in flight
	AlgoCircuitBreaker                  // refuses while a dependency fails (see Strategy); internal/algo/breaker.go
	// AlgoAdaptiveConcurrency caps calls in flight at a limit it finds from
	// their response times (see InitialLimit..Smoothing).
	AlgoAdaptiveConcurrency
	AlgoAllow // refuses callers whose identity is not in Values; lists.go
	AlgoDeny  // refuses callers whose identity is in Values; lists.go
	// AlgoSentinelWindow counts as Alibaba Sentinel's QPS rules do: two
	// unweighted half-window buckets aligned to the Unix epoch
	// (internal/algo/sentinel_window.go); rules imported from Sentinel use it.
	AlgoSentinelWindow
	// AlgoSentinelWarmUp is Alibaba Sentinel's warm-up (its token formula
	// and per-second sync, not Guava's curve; internal/algo/sentinel_warm_up.go); warm-up
	// rules imported from Sentinel use it.
	AlgoSentinelWarmUp
	// AlgoSentinelHotspot is sentinel-golang's per-value hotspot limiter:
	// lump refills once per Window, Burst extra tokens, or with MaxWait its
	// millisecond throttling (internal/algo/sentinel_hotspot.go); hotspot rules imported
	// from Sentinel use it.
	AlgoSentinelHotspot
	// AlgoClientThrottle guards calls a program makes: Google SRE adaptive
	// throttling, refusing locally as the backend stops accepting (see K;
	// outbound.go).
	AlgoClientThrottle
	// AlgoRetryBudget lets retries (calls entered WithRetry) through only
	// while they stay a share of first attempts (see Ratio; outbound.go).
	AlgoRetryBudget
	numAlgorithms
)

var algorithmNames = [numAlgorithms]string{
	"token_bucket", "warm_up", "leaky_bucket", "fixed_window", "sliding_window", "sliding_log", "concurrency",
	"circuit_breaker",
	"adaptive_concurrency", "allow", "deny",
	"sentinel_window", "sentinel_warm_up", "sentinel_hotspot",
	"client_throttle", "retry_budget",
}

// String returns the algorithm's JSON name.
func (a Algorithm) String() string {
	if a < numAlgorithms {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// Rule is one limit on one resource at one level. It mirrors the JSON rule
// document field for field (see package rules): the table of fields
// (RuleFields, rule_table.go) gives each its JSON name, the algorithms and
// levels that take it, its default and its checks. A new field is a new
// row there.
type Rule struct {
	// ID names the rule in errors, statistics and BlockError; optional,
	// but unique within a rule set when set.
	ID string
	// Resource is the name Entry is called with; required.
	Resource string
	// Level is who shares the limit: all callers (LevelGlobal, the
	// default), each user (LevelUser), each client IP (LevelIP) or each
	// value of the call parameter Param (LevelParam).
	Level Level
	// Param names the call parameter a LevelParam rule counts per value
	// (given per call by WithParam); required at that level, an error at
	// any other.
	Param string
	// Algorithm decides how calls are admitted.
	Algorithm Algorithm
	// Limit is the permits per Window; for AlgoConcurrency the maximum in flight.
	Limit float64
	// Window is the span Limit is counted over. Default 1s.
	Window time.Duration
	// Burst is the most permits a token bucket stores. Default Limit. For
	// AlgoSentinelHotspot: extra tokens on top of Limit (Sentinel's
	// burstCount). Default 0.
	Burst float64
	// Warmup is the warm-up period of AlgoWarmUp and AlgoSentinelWarmUp.
	Warmup time.Duration
	// ColdFactor is the cold rate divisor of AlgoWarmUp and
	// AlgoSentinelWarmUp (a whole number there, as in Sentinel). Default 3.
	ColdFactor float64
	// Buckets is the number of sub-windows of AlgoSlidingWindow, and of a
	// circuit breaker's statistics window: it slides by Window/Buckets,
	// and 1 makes it a tumbling window, as Sentinel's breakers count
	// (rules imported from Sentinel carry its count). Default 10.
	Buckets int
	// MaxWait > 0 lets a call wait this long for its turn instead of being blocked.
	MaxWait time.Duration
	// MaxKeys bounds the users or IPs tracked at the user and ip levels
	// (least recently used evicted first). Default 100000, at most
	// MaxKeysLimit.
	MaxKeys int
	// IdleTTL forgets a user or IP idle this long. Default 10m.
	IdleTTL time.Duration
	// Adaptive lets the CPU controller scale this rule's limit.
	Adaptive bool
	// BoostLimit caps the limit the CPU controller's idle-CPU boost may
	// raise this rule to (a factor above 1, adaptive.Config.Boost), in
	// Limit's units; at least Limit. 0 (the default): the boost factor
	// alone caps it. Only with Adaptive, and not for cluster rules, which
	// the boost never raises.
	BoostLimit float64
	// Cluster, when set, has the rule decided cluster-wide by the token server.
	// Not for circuit breakers, lists or RefResource rules: they are per instance.
	Cluster *ClusterSpec
	// MaxDebt bounds the debt one call's settlement may leave
	// (Permit.Exit with WithActualCost): a call that cost more than it
	// reserved takes the extra even when none is left, but the limiter
	// never owes more than MaxDebt permits, so over any window the cost
	// admitted stays within Limit (plus Burst) plus MaxDebt. 0 (the
	// default) stands for Limit.
	// For token_bucket, warm_up, leaky_bucket, fixed_window,
	// sliding_window and sliding_log, the algorithms that settle (through
	// the token server too for cluster rules).
	MaxDebt float64
	// Stripes spreads a global cluster rule over that many Redis keys, each
	// with a hash tag of its own (so on Redis Cluster, over that many hash
	// slots and, with enough masters, that many masters), each holding an
	// equal share of Limit; a call takes from one stripe, round-robin. 0 or
	// 1: one key. At most MaxStripes and at most Limit; only for global
	// cluster rules with threshold global, and only for token_bucket,
	// fixed_window, sliding_window and sliding_log. See docs/cluster.md.
	Stripes int
	// Shadow has the rule decide and count as usual but never refuse: a
	// call it would have refused goes on, and the would-be refusal is
	// counted (RuleStats.ShadowBlocked) and logged at debug. See shadow.go
	// for how its permits interact with the other rules'. Any algorithm.
	Shadow bool
	// Items gives single values of a keyed rule (user, ip, param) their own
	// Limit, the rest of the rule unchanged (Sentinel's hotspot items). At
	// most MaxItems; ip items are IP addresses in canonical form.
	Items map[string]float64
	// Values is the list of an AlgoAllow or AlgoDeny rule (and an error on
	// any other): user ids, param values, or at the ip level addresses and
	// CIDR prefixes (IPv4 and IPv6).
	Values []string
	// AllowMissing lets a call that carries no identity (no WithUser,
	// WithIP or WithParam of the rule's param, or an empty one) through an
	// AlgoAllow rule, which otherwise refuses it; Java Sentinel's authority
	// white list lets a call without an origin pass this way. An error on
	// any other algorithm (a deny rule passes such calls anyway).
	AllowMissing bool
	// RefResource, on a global rate rule, has the rule decide calls of
	// Resource on the traffic of another resource (Sentinel's associated
	// strategy): see refs.go for the exact measure.
	RefResource string

	// The fields below are for AlgoCircuitBreaker only (and an error on any
	// other algorithm); Window is the breaker's statistics span there.

	// Strategy is what a breaker measures; required for breakers.
	Strategy BreakerStrategy
	// Threshold trips the breaker: a ratio in (0, 1] for the ratio
	// strategies (opens when the ratio is > Threshold), a whole count >= 1
	// for BreakerErrorCount (opens when errors >= Threshold). Required.
	Threshold float64
	// MinRequests is the fewest completed calls in the window before the
	// breaker may open. Default 5.
	MinRequests int
	// OpenFor is how long an open breaker refuses before going half-open. Required.
	OpenFor time.Duration
	// Probes is how many calls a half-open breaker lets through; all must
	// succeed to close it. Default 1.
	Probes int
	// SlowCall is the response time above which a call is slow
	// (BreakerSlowRatio only, and required there).
	SlowCall time.Duration

	// The fields below are for AlgoAdaptiveConcurrency (Reserve also for
	// AlgoConcurrency), and an error on any other algorithm.

	// InitialLimit, MinLimit and MaxLimit are the starting concurrency
	// limit of AlgoAdaptiveConcurrency and its bounds. Defaults 20, 1, 1000.
	InitialLimit, MinLimit, MaxLimit int
	// Tolerance is how much the response time of AlgoAdaptiveConcurrency may
	// exceed the long-term (no-queue) one before the limit shrinks. Default 1.5.
	Tolerance float64
	// Smoothing is the weight, in (0, 1], of each new limit estimate of
	// AlgoAdaptiveConcurrency. Default 0.2.
	Smoothing float64
	// Reserve holds back parts of a concurrency or adaptive_concurrency
	// limit for higher priorities. Default (nil) DefaultReserve.
	Reserve *Reserve

	// K is how many requests per one the backend accepted an
	// AlgoClientThrottle lets out before it starts refusing locally, over
	// Window (default 2m). Default 2 (Google SRE's choice); at least 1.
	K float64
	// Ratio, MinPerSecond and TTL are an AlgoRetryBudget's: each first
	// attempt earns Ratio retries (default 0.2), MinPerSecond retries a
	// second are always allowed (default 10), and what a first attempt
	// earned lapses after TTL (default 10s).
	Ratio, MinPerSecond float64
	TTL                 time.Duration
}

// ClusterSpec makes a rule cluster-wide.
type ClusterSpec struct {
	// Threshold is "global" (Limit is for the whole cluster, the default) or
	// "per_instance" (Limit per live instance).
	Threshold string
	// Fallback is what happens when the token server cannot answer: "local"
	// (the default: a local limiter at Limit divided by the instance count),
	// "allow" or "deny".
	Fallback string
}
