package flow

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Defaults filled by Rule.WithDefaults.
const (
	DefaultWindow = time.Second
	// DefaultThrottleWindow is a client_throttle's window (Google SRE's two minutes).
	DefaultThrottleWindow = 2 * time.Minute
	// DefaultThrottleK is a client_throttle's K.
	DefaultThrottleK = 2.0
	// DefaultRetryRatio, DefaultRetryMinPerSecond and DefaultRetryTTL are a
	// retry_budget's (Finagle's and tower's).
	DefaultRetryRatio        = 0.2
	DefaultRetryMinPerSecond = 10.0
	DefaultRetryTTL          = 10 * time.Second
	DefaultColdFactor        = 3.0
	DefaultBuckets           = 10
	DefaultMaxKeys           = 100000
	DefaultIdleTTL           = 10 * time.Minute
	// MaxKeysLimit bounds MaxKeys: 268 435 455, tens of GiB of keys for
	// one rule, far past any client count a process can serve; a larger
	// value is taken for a mistake.
	MaxKeysLimit = 1<<28 - 1
	// MaxSlidingLogLimit bounds Limit of a sliding_log rule: it keeps Limit
	// timestamps per key.
	MaxSlidingLogLimit = 1 << 20
	// MaxPermitInterval bounds the time one permit of a rate rule takes to
	// come back, Window/Limit (of each item's limit too): a limit below
	// Window/MaxPermitInterval is refused. It equals the longest window,
	// so any limit of at least 1 holds; a tiny fraction (4.9e-324) would
	// admit one call and then refuse the next for hundreds of years.
	MaxPermitInterval = MaxDuration
	maxBuckets        = 3600
	// Defaults of adaptive_concurrency rules.
	DefaultInitialLimit = 20
	DefaultMinLimit     = 1
	DefaultMaxLimit     = 1000
	DefaultTolerance    = 1.5
	DefaultSmoothing    = 0.2
	// DefaultMinRequests and DefaultProbes are a circuit breaker's.
	DefaultMinRequests = 5
	DefaultProbes      = 1
)

// WithDefaults returns a copy of r with the documented defaults filled in:
// Window 1s; token_bucket Burst = Limit; warm_up ColdFactor 3; sliding_window
// and circuit_breaker Buckets 10; circuit_breaker MinRequests 5 and Probes 1; user/ip/param MaxKeys 100000 and
// IdleTTL 10m (not for lists, which track no keys); a Cluster spec's
// Threshold "global" and Fallback "local". Fields that do not apply to the
// rule's algorithm or level stay zero (the table of fields, rule_table.go,
// says which do). r is not modified.
func (r Rule) WithDefaults() Rule {
	if r.Cluster != nil {
		c := *r.Cluster
		r.Cluster = &c
	}
	if r.Reserve != nil {
		res := *r.Reserve
		r.Reserve = &res
	}
	for i := range ruleFields {
		if f := &ruleFields[i]; f.Takes(&r) {
			f.setDefault(&r)
		}
	}
	return r
}

// Validate reports every problem of r, joined, each a *RuleError (Index -1)
// that reads "field: message" with the rule document's field names, e.g.
// "limit: must be > 0". Zero values that have defaults are valid. A field
// that does not apply to r's algorithm or level must be zero; the table of
// fields (rule_table.go) says which apply and checks each value.
func (r Rule) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fieldProblem(field, format, args...))
	}
	levelOK := r.Level < NumLevels && r.Level != LevelSystem
	if !levelOK {
		bad("level", "must be global, user, ip or param, not %v", r.Level)
	}
	if r.Algorithm >= numAlgorithms {
		bad("algorithm", "unknown %v", r.Algorithm)
	}
	if !levelOK || r.Algorithm >= numAlgorithms {
		// Which fields apply depends on the algorithm and level: with
		// either wrong, every other message would be noise.
		checkResource(&r, bad)
		return errors.Join(errs...)
	}
	for i := range ruleFields {
		f := &ruleFields[i]
		if !f.Takes(&r) {
			if !f.IsZero(&r) {
				bad(f.Name, "%s", f.NotFor(&r))
			}
			continue
		}
		f.checkKind(&r, bad)
		if f.bounds != nil {
			f.checkBounds(&r, bad)
		}
		if f.check != nil {
			f.check(&r, bad)
		}
	}
	r.validateAdaptive(bad)
	return errors.Join(errs...)
}

// checkWindow checks a window against what the rule's algorithm can count
// in it.
func checkWindow(r *Rule, bad badFunc) {
	if r.Window < 0 {
		bad("window", "must be >= 0, not %v", r.Window)
		return
	}
	w := r.Window
	if w == 0 {
		w = DefaultWindow
	}
	switch r.Algorithm {
	case AlgoCircuitBreaker:
		if r.Window != 0 && r.Window < minBreakerWd {
			bad("window", "must be at least %v for circuit_breaker rules, not %v", minBreakerWd, r.Window)
		}
	case AlgoSentinelWindow:
		if w%(2*time.Millisecond) != 0 {
			bad("window", "must be a positive multiple of 2ms for sentinel_window (two buckets on Sentinel's millisecond clock), not %v", w)
		}
	case AlgoSlidingWindow:
		if b := cmp.Or(r.Buckets, DefaultBuckets); b >= 1 && w < time.Duration(b) {
			bad("window", "must be at least 1ns per bucket (%d buckets), not %v", b, w)
		}
	case AlgoSentinelWarmUp:
		validateSentinelWarmUp(w, bad)
	case AlgoSentinelHotspot:
		validateSentinelHotspot(w, bad)
	}
}

// ValidateRules reports every problem of every rule, and duplicate ids, each
// a *RuleError with the rule's place, reading
// `rules[3] (id "orders"): limit: must be > 0` (`rules[0]: ` when the id is
// empty). Callers that present problems their own way (package rules)
// take them apart with errors.As, not by reading the text.
func ValidateRules(rules []Rule) error {
	var errs []error
	seen := make(map[string]int, len(rules))
	for i := range rules {
		r := &rules[i]
		if err := r.Validate(); err != nil {
			for _, e := range unjoin(err) {
				re := &RuleError{Index: i, ID: r.ID, Msg: e.Error()}
				var fe *RuleError
				if errors.As(e, &fe) {
					re.Field, re.Msg = fe.Field, fe.Msg
				}
				errs = append(errs, re)
			}
		}
		if r.ID == "" {
			continue
		}
		if j, dup := seen[r.ID]; dup {
			errs = append(errs, &RuleError{Index: i, ID: r.ID, Field: "id", Msg: "duplicate of rules[" + strconv.Itoa(j) + "]"})
		} else {
			seen[r.ID] = i
		}
	}
	return errors.Join(errs...)
}

// RuleError is one problem of one rule, as Rule.Validate and ValidateRules
// report it: a typed value, so that a caller can place it (package rules
// adds JSON line numbers and merges it with its own problems) without
// parsing the text.
type RuleError struct {
	// Index is the rule's position in the slice given to ValidateRules; -1
	// from Rule.Validate, which does not know it.
	Index int
	// ID is the rule's id; "" when it has none or Index is -1.
	ID string
	// Field is the field at fault, in the rule document's names ("limit",
	// "cluster.fallback"); "" for the rule as a whole.
	Field string
	// Msg says what is wrong, such as "must be > 0, not 0".
	Msg string

	cause error // what Msg was made from, if an error (Unwrap)
}

// Unwrap returns the error the problem was made from, if any: building a
// rule's limiter can fail with a lower package's error (tokenbucket).
func (e *RuleError) Unwrap() error { return e.cause }

// Error reads `rules[3] (id "orders"): limit: must be > 0, not 0`: the
// place (left out when Index is -1; the id when there is one), the field
// (when there is one), then the message.
func (e *RuleError) Error() string {
	var b strings.Builder
	if e.Index >= 0 {
		b.WriteString("rules[")
		b.WriteString(strconv.Itoa(e.Index))
		b.WriteString("]")
		if e.ID != "" {
			b.WriteString(" (id ")
			b.WriteString(strconv.Quote(e.ID))
			b.WriteString(")")
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// fieldProblem is one problem of a rule's field, as Rule.Validate reports
// it: a *RuleError that does not know the rule's place yet.
func fieldProblem(field, format string, args ...any) error {
	return &RuleError{Index: -1, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// unjoin splits an errors.Join result so each problem gets its own place.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// limitProblem says what is wrong with limit as the limit of r's
// algorithm ("" when nothing): the rule's Limit and its items' limits obey
// the same rules.
func (r *Rule) limitProblem(limit float64) string {
	switch {
	case math.IsNaN(limit) || math.IsInf(limit, 0):
		return fmt.Sprintf("must be a finite number, not %v", limit)
	case limit <= 0:
		return fmt.Sprintf("must be > 0, not %v", limit)
	case limit > MaxAmount:
		return fmt.Sprintf("must be at most %v (flow.MaxAmount), not %v", amountText(MaxAmount), limit)
	case r.Algorithm != AlgoConcurrency && r.Window <= MaxDuration && float64(cmp.Or(r.Window, DefaultWindow))/limit > float64(MaxPermitInterval):
		// (A window past its own bound has its own problem.)
		w := cmp.Or(r.Window, DefaultWindow)
		return fmt.Sprintf("must be at least %v per window of %v: one permit may take at most %v to come back (flow.MaxPermitInterval), not %v",
			float64(w)/float64(MaxPermitInterval), w, hoursText(MaxPermitInterval), limit)
	case r.Algorithm == AlgoConcurrency && limit != math.Trunc(limit):
		return fmt.Sprintf("must be a whole number for concurrency, not %v", limit)
	case r.Algorithm == AlgoSlidingLog && limit > MaxSlidingLogLimit:
		return fmt.Sprintf("must be <= %d for sliding_log (it keeps limit timestamps per key), not %v", MaxSlidingLogLimit, limit)
	case r.Algorithm == AlgoSlidingWindow && limit > maxSlidingWindowLimit:
		return fmt.Sprintf("must be <= %d for sliding_window, not %v", maxSlidingWindowLimit, limit)
	}
	return ""
}

// amountText writes a bound as a rules document would: 1e15, not 1e+15.
func amountText(f float64) string {
	return strings.Replace(strconv.FormatFloat(f, 'g', -1, 64), "e+", "e", 1)
}

// hoursText writes a bound of whole hours as a duration string the rules
// document takes, "8784h" (Duration.String writes "8784h0m0s").
func hoursText(d time.Duration) string {
	if d%time.Hour != 0 {
		return d.String()
	}
	return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
}
