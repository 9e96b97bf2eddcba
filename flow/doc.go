// Package flow owns admission: the Engine that decides, per call, whether a
// resource may be entered under the rules in force.
//
// A service guards a call with Entry and ends it with Exit:
//
//	p, err := eng.Entry("GET /orders", flow.WithUser(id), flow.WithIP(ip))
//	if err != nil { // a *BlockError: errors.Is(err, flow.ErrBlocked)
//		return err
//	}
//	defer p.Exit()
//
// or lets Guard do both around a function. Decide is Entry returning a
// Decision by value, for callers that answer refusals themselves (the HTTP
// and gRPC middleware): a refused Decide allocates nothing, where Entry
// allocates its *BlockError.
//
// A Permit is a small value. Its first Exit ends the call; any later Exit
// of it or of a copy does nothing, even once the engine has reused the
// call's pooled record for another call, so `defer p.Exit()` beside an
// explicit Exit on an error path is safe.
//
// # One path
//
// LoadRules compiles each resource into an ordered list of checks, and
// every Entry runs the same loop over it (checks.go): allow and deny lists,
// related resources, circuit breakers, then each level's local limits and
// cluster rules. The first check that refuses ends the loop; what earlier
// checks took is given back, and Engine.refuse writes the one BlockError.
//
// # Levels
//
// A Rule counts the calls of all callers (LevelGlobal), of one user
// (LevelUser, keyed by WithUser), of one client IP (LevelIP, keyed by
// WithIP) or of one value of a call parameter (LevelParam, keyed by
// WithParam). Rules of every level on one resource combine. They are checked
// most specific first — IP, then user, then param, then global — so a flood from one
// client is refused before it touches the shared quota, and permits taken at
// one level are given back when a later level refuses: a refused call
// consumes nothing. Several rules at one level (10/s and 1000/h per user)
// must all pass. A call without a user (IP) is not checked at that level.
// Per-user and per-IP limiters live in sharded tables bounded by MaxKeys and
// forgetting keys idle past IdleTTL. A resource with no rule always passes.
//
// # Choosing an algorithm
//
//	algorithm       good for                          cost and caveat
//	token_bucket    bursty APIs: average rate, bursts  Guava SmoothBursty; starts full
//	warm_up         cold caches, JIT, new connections  ramps from Limit/ColdFactor over Warmup
//	sentinel_window rules migrated from Sentinel       Sentinel's QPS count: two whole 500ms buckets
//	sentinel_warm_up rules migrated from Sentinel      Sentinel's warm-up formula, not Guava's
//	sentinel_hotspot param rules migrated from Sentinel  lump refills per Window; Burst extra tokens
//	leaky_bucket    smooth output, queueing (MaxWait)  no burst: calls spaced Window/Limit apart
//	fixed_window    the simplest counter               admits up to 2x Limit across a boundary
//	sliding_window  a cheap, close approximation       Buckets counters; previous window weighted
//	sliding_log     exact: never > Limit in any Window  Limit timestamps of memory per key
//	concurrency     slow backends, pools               in-flight cap; Exit releases
//	adaptive_concurrency  unknown or changing capacity  in-flight cap found from Exit's RTTs
//	client_throttle  calls this program makes          Google SRE throttling: refuses as the backend stops accepting
//	retry_budget     retries this program makes        retries (WithRetry) only as a share of first attempts
//
// MaxWait > 0 lets a call of a rate algorithm wait, on the engine's clock and
// bounded by WithContext's context, for its turn instead of being refused.
//
// # Priorities
//
// WithPriority marks a call PriorityCritical, PriorityHigh, PriorityNormal
// (the default) or PriorityLow. Under a concurrency or adaptive_concurrency
// rule a class may fill only part of the limit (Rule.Reserve, default: low
// calls half of it, the others all of it), so low-priority work cannot
// crowd out critical calls; an adaptive_concurrency rule also shrinks the
// share of a class while a higher one is being refused. The system guard
// lets low calls fill half its bound, and while the CPU controller holds
// the factor below 1 low calls to resources with an adaptive rule are shed
// first. Such a refusal has Reason ReasonPriority.
//
// Both work per key at the user and ip levels like any keyed rule; a
// further keyed level (param) gets them unchanged, since limiters are built
// per key by one constructor and priorities reach them through one hook.
//
// # Circuit breakers
//
// A circuit_breaker rule (internal/algo/breaker.go) counts the outcomes Exit records over
// its Window — errors, or calls slower than SlowCall — and opens when,
// with at least MinRequests completed, the ratio is > Threshold
// (BreakerErrorRatio, BreakerSlowRatio) or the errors are >= Threshold
// (BreakerErrorCount). Open, it refuses with ReasonBreakerOpen for OpenFor;
// then exactly Probes calls pass, and all must succeed to close it. Breakers
// are checked before the levels, so an open one takes no flow permit; at
// the user and ip levels there is one per key. They are per instance (no
// Cluster spec). WithBreakerListener reports every state change.
//
// # Shadow rules
//
// A rule with Shadow set decides every call as it would if it enforced and
// refuses none: a would-be refusal is counted (RuleStats.ShadowBlocked) and
// logged at debug, and the call goes on. A shadow refusal takes nothing; a
// shadow pass takes from the rule's own limiter and is given back like any
// rule's when a later rule refuses; a shadow rule never makes a call wait
// and never sets its Quota; a shadow breaker records only the calls it
// would have let through, so it moves as an enforcing one would. Allow and
// deny lists, RefResource rules, param rules and their items shadow alike
// (a shadow list's would-be refusal is not a list refusal, ResourceStats'
// Denied and NotAllowed; an item's counts on its rule). Its count
// is therefore exactly the refusals of an enforcing copy that saw the same
// calls, and a reload that only flips Shadow keeps the rule's state.
//
// # Around the engine
//
// Rules come from package rules (JSON, validation, hot reload) through
// LoadRules, which swaps an immutable snapshot atomically; unchanged rules
// keep their state. Package adaptive scales rules marked Adaptive through
// SetAdaptiveFactor and guards the process with SetSystemLimit. Rules with a
// Cluster spec are decided by a TokenServer (package cluster) with a local,
// allow or deny fallback; on an engine without one they are decided locally
// at their full Limit. Snapshot exposes lock-free statistics to packages
// metrics and alerting; counts are exact, response times are measured on 1
// call in 32 under load on the real clock (WithRTSampling). For operators (package
// admin), BlockedByRule counts refusals per rule, TopKeys lists the users
// and IPs each keyed rule refuses most (a bounded Space-Saving summary, see
// WithTopKeys), and InspectKey and ResetKey read and forget one key's
// state. The engine starts no goroutine and needs no Close.
//
// Time comes from a clock.Clock (WithClock): tests drive the engine on
// clock.Fake and never sleep.
package flow
