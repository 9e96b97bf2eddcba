package flow

import (
	"context"
	"log/slog"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// Option configures an Engine.
type Option func(*config)

type config struct {
	// seed, when not 0, seeds every client_throttle's random draws (tests
	// that must repeat a run; see withSeed); 0: each draws its own seed.
	seed         uint64
	clk          clock.Clock
	ts           TokenServer
	log          *slog.Logger
	statsWindow  time.Duration
	statsBuckets int
	rtSampling   int    // as given to WithRTSampling; 0: not given
	rtMask       uint32 // measure when rand & rtMask == 0
	onBreaker    func(BreakerEvent)

	// WithTopKeys (keys.go): counters (0 default, < 0 off) and window.
	topKeys   int
	topWindow time.Duration
}

// WithRTSampling has Exit measure response time on a random 1 in n calls
// once traffic is heavy (n rounded up to a power of two, at most 1024;
// n <= 1 measures every call). Default: 32 with clock.Real(), every call
// with any other clock.
//
// Measuring costs a clock read per Exit, about as much as the rest of Exit
// together, so under load the real clock measures one call in 32. Light
// traffic is measured whole: every call is measured while the statistics
// bucket its Entry counted in has counted no more than 8 calls in its
// lane (the lanes spread a resource's counters over the CPUs: a goroutine
// calling again and again mostly counts in one lane, many goroutines in up
// to 2 × GOMAXPROCS lanes, at most 16), and so is every call an
// adaptive_concurrency limit learns from. The counts stay exact (Passed,
// Completed, InFlight, Errors, Blocked, in the lifetime totals and the
// recent window); what is sampled is the response time: a call measured
// by sampling stands for n, one measured whole for itself, so RTSum and
// RTHist's counts are unbiased estimates (RTHist's counts add up to about
// Completed), and the recent window's MinRT and MaxRT are over the
// measured calls only. A call not measured counts as completed in the
// statistics bucket of its Entry. Other clocks (clock.Fake in tests) are
// assumed cheap to read and measure every call, so their figures are
// exact.
func WithRTSampling(n int) Option { return func(cf *config) { cf.rtSampling = max(n, 1) } }

// rtMaskFor is the sampling mask for 1 in n (a power of two >= n, <= 1024).
func rtMaskFor(n int) uint32 {
	p := uint32(1)
	for int(p) < n && p < 1024 {
		p <<= 1
	}
	return p - 1
}

// WithClock sets the engine's clock. Default clock.Real().
func WithClock(c clock.Clock) Option { return func(cf *config) { cf.clk = c } }

// WithTokenServer has rules with a Cluster spec decided by ts. Without one,
// cluster rules are decided locally at their full Limit, as if this
// instance were the whole cluster.
func WithTokenServer(ts TokenServer) Option { return func(cf *config) { cf.ts = ts } }

// WithLogger sets where the engine logs (token server failures, fallbacks).
// Default: silent.
func WithLogger(l *slog.Logger) Option { return func(cf *config) { cf.log = l } }

// WithStatsWindow sets the span of the recent statistics window and the
// number of buckets it is kept in. Default 1s in 10 buckets. Invalid values
// (d <= 0, buckets < 1) keep the default.
func WithStatsWindow(d time.Duration, buckets int) Option {
	return func(cf *config) {
		if d > 0 && buckets >= 1 {
			cf.statsWindow, cf.statsBuckets = d, buckets
		}
	}
}

// EntryOption qualifies one Entry. It is a small value, not a closure, so a
// handler that builds options per call allocates nothing for them.
type EntryOption struct {
	kind entryKind
	name string // WithParam's name
	s    string
	n    int
	ctx  context.Context
	fb   func(context.Context, *BlockError) error
}

type entryKind uint8

const (
	optNone entryKind = iota
	optContext
	optUser
	optIP
	optTokens
	optFallback
	optPriority
	optParam
	optRetry
)

// WithContext gives the context that bounds a MaxWait wait (and is passed to
// the token server). Default context.Background().
func WithContext(ctx context.Context) EntryOption { return EntryOption{kind: optContext, ctx: ctx} }

// WithUser names the caller for user-level rules. Without it (or with ""),
// user-level rules do not apply to the call.
func WithUser(id string) EntryOption { return EntryOption{kind: optUser, s: id} }

// WithIP names the client IP for ip-level rules. Without it (or with ""),
// ip-level rules do not apply to the call.
func WithIP(ip string) EntryOption { return EntryOption{kind: optIP, s: ip} }

// WithParam gives the value of the call parameter name, for param-level
// rules with that Param (a tenant, an API key, an origin application, a
// product id, a downstream host). A call may carry several; for one name
// given twice the last wins. Up to four per call allocate nothing. Without it (or with value ""), the rules of
// that parameter do not apply to the call, except allow lists (see
// AlgoAllow).
func WithParam(name, value string) EntryOption {
	return EntryOption{kind: optParam, name: name, s: value}
}

// WithTokens asks for n permits at every level (default 1; n < 1 counts as 1).
func WithTokens(n int) EntryOption { return EntryOption{kind: optTokens, n: n} }

// WithFallback gives Guard a function to call instead of fn when the call
// is refused (an open circuit breaker, a limit): Guard then returns what
// fallback returns, e.g. a cached answer and nil. It is not called for the
// outcome of fn, and Entry ignores it. Default: none, Guard returns the
// *BlockError. blocked is the call's own, but its Refuser is the rule's:
// read it, never change it.
func WithFallback(fallback func(ctx context.Context, blocked *BlockError) error) EntryOption {
	return EntryOption{kind: optFallback, fb: fallback}
}

// ExitOption qualifies Permit.Exit.
type ExitOption struct {
	err     error
	cost    int
	hasCost bool
}

// WithError records that the guarded call failed with err (nil: success).
func WithError(err error) ExitOption { return ExitOption{err: err} }

// WithActualCost settles the call at its real cost, n permits, known only
// once it ran (LLM tokens, bytes, CPU-milliseconds), against the estimate
// its Entry reserved (WithTokens, default 1). On each local rule that
// admitted the call, the difference is charged or given back, as the
// rule's algorithm settles it (see Rule.MaxDebt and docs/cost.md): a token
// bucket goes into debt that later calls pay, a window adjusts the window
// the call was counted in while it is open. Cluster rules are settled by
// their token server, in the Release that ends the call (one round trip;
// see TokenRequest.Settle). A negative n counts as 0.
// Concurrency rules hold no cost: for them the option is refused, with a
// log line once per rule, and the call ends as without it.
func WithActualCost(n int) ExitOption { return ExitOption{cost: max(n, 0), hasCost: true} }

// param returns the value opts give the parameter name (the last one
// given), "" when not given. A scan of a few options costs less than
// building a map.
func param(opts []EntryOption, name string) string {
	for i := len(opts) - 1; i >= 0; i-- {
		if o := &opts[i]; o.kind == optParam && o.name == name {
			return o.s
		}
	}
	return ""
}
