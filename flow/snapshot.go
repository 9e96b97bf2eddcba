package flow

import "time"

// Snapshot is a consistent-enough copy of the engine's statistics: each
// counter is read atomically, the set is not read under one lock (reading
// never blocks Entry).
type Snapshot struct {
	Time           time.Time       // when it was taken, on the engine's clock
	Resources      []ResourceStats // sorted by name
	Rules          []RuleStats     // one per rule in force, in load order
	AdaptiveFactor float64         // 1 when no controller
	SystemLimit    int64           // 0 = system guard off
	Cluster        ClusterStats    // token server outcomes; zero without one
	Breakers       []BreakerStats  // one per circuit breaker rule, in load order
}

// ResourceStats are the statistics of one resource that has (or had) rules.
type ResourceStats struct {
	Resource string // the resource's name
	// Lifetime totals since the engine started. Passed, Waited and
	// Blocked partition the calls, as the metrics' result label does: a
	// call admitted at once is Passed, one admitted after queueing (MaxWait)
	// is Waited, never both; Admitted is their sum.
	Passed  uint64            // admitted without waiting
	Waited  uint64            // admitted after queueing (MaxWait)
	Blocked [NumLevels]uint64 // indexed by Level
	// Denied and NotAllowed count the Blocked calls refused by deny and
	// allow rules, by level.
	Denied, NotAllowed [NumLevels]uint64
	Completed          uint64 // Exit calls
	Errors             uint64 // Exit(WithError(err)) with err != nil, Guard fn errors
	InFlight           int64  // entered and not yet exited, now
	// RTSum and RTHist are over measured calls, each standing for the
	// calls it was sampled from (WithRTSampling: under load 1 in 32 on the
	// real clock; light traffic, and every call on other clocks, measured
	// whole): estimates, with RTHist's counts adding up to about
	// Completed; exact when every call is measured.
	RTSum    time.Duration // sum of response times (Entry to Exit)
	WaitSum  time.Duration // sum of queueing times of Waited calls
	RTHist   Histogram     // response times of completed calls
	WaitHist Histogram     // queueing times of Waited calls
	// Recent is the sliding window (WithStatsWindow, default 1s in 10 buckets).
	Recent WindowStats
}

// Admitted returns the calls let in, at once or after a wait: Passed +
// Waited.
func (r ResourceStats) Admitted() uint64 { return r.Passed + r.Waited }

// WindowStats are counts over the recent statistics window.
type WindowStats struct {
	// Admitted counts the calls let in (ResourceStats.Admitted: passed at
	// once or after a wait); Blocked, Completed and Errors count as
	// ResourceStats does; all over the window only.
	Admitted, Blocked, Completed, Errors uint64
	// RTSum is an estimate and MinRT, MaxRT are over measured calls only
	// when response time is sampled (see WithRTSampling).
	RTSum, MinRT, MaxRT time.Duration // MinRT, MaxRT 0 when nothing completed
	Span                time.Duration // the window length
}

// Histogram is a fixed-bucket histogram. Counts[i] counts values <= Bounds[i]
// (and > Bounds[i-1]); the last count is for values above every bound.
// Counts are not cumulative; Bounds are in seconds and shared: do not modify.
type Histogram struct {
	Bounds []float64 // upper bounds in seconds, ascending
	Counts []uint64  // len(Bounds)+1 counts
}

// RuleStats describes one rule in force.
type RuleStats struct {
	ID, Resource   string        // as in the Rule
	Level          Level         // as in the Rule
	Algorithm      Algorithm     // as in the Rule
	Limit          float64       // as configured
	EffectiveLimit float64       // after the adaptive factor (and cluster fallback share)
	Window         time.Duration // as in the Rule, default applied
	Keys           int           // tracked users or IPs (user/ip levels)
	Adaptive       bool          // the adaptive controller may scale it
	Cluster        bool          // decided by the token server (Rule.Cluster set)
	// AdaptiveConcurrency is the state of a global adaptive_concurrency
	// rule's limiter (its EffectiveLimit is the same Limit); nil for other
	// algorithms and levels (a user or ip rule has one limiter per key).
	AdaptiveConcurrency *AdaptiveStats
	// Cost is what calls settled at Exit with WithActualCost (see
	// CostStats); Owed is what a global rule's limiter owes now, in
	// permits, from settlements that cost more than the limit had left.
	Cost CostStats
	Owed float64
	// Shadow is Rule.Shadow: the rule decides but never refuses.
	Shadow bool
	// ShadowBlocked counts the calls the rule would have refused while in
	// shadow, since it was loaded with this configuration (flipping Shadow
	// on reload keeps the count; see Rule.Shadow). The calls went on.
	ShadowBlocked uint64
	// Outbound is a client_throttle's or retry_budget's state (its
	// refusals are BlockedByRule's); nil for other algorithms.
	Outbound *OutboundStats
}
