package flow

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults filled by Rule.WithDefaults.
const (
	DefaultWindow     = time.Second
	DefaultColdFactor = 3.0
	DefaultBuckets    = 10
	DefaultMaxKeys    = 100000
	DefaultIdleTTL    = 10 * time.Minute
	// MaxKeysLimit bounds MaxKeys: 268 435 455, tens of GiB of keys for
	// one rule, far past any client count a process can serve; a larger
	// value is taken for a mistake.
	MaxKeysLimit = 1<<28 - 1
	// MaxSlidingLogLimit bounds Limit of a sliding_log rule: it keeps Limit
	// timestamps per key.
	MaxSlidingLogLimit = 1 << 20
	maxBuckets         = 3600
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
// Buckets 10; circuit_breaker MinRequests 5 and Probes 1; user/ip/param MaxKeys 100000 and
// IdleTTL 10m (not for lists, which track no keys); a Cluster spec's
// Threshold "global" and Fallback "local". Fields that do not apply to the
// rule's algorithm or level stay zero. r is not modified.
func (r Rule) WithDefaults() Rule {
	if r.Window == 0 && r.Algorithm != AlgoAdaptiveConcurrency && !r.Algorithm.isList() {
		r.Window = DefaultWindow
	}
	switch r.Algorithm {
	case AlgoTokenBucket:
		if r.Burst == 0 {
			r.Burst = r.Limit
		}
	case AlgoWarmUp, AlgoSentinelWarmUp:
		if r.ColdFactor == 0 {
			r.ColdFactor = DefaultColdFactor
		}
	case AlgoSlidingWindow:
		if r.Buckets == 0 {
			r.Buckets = DefaultBuckets
		}
	case AlgoCircuitBreaker:
		if r.MinRequests == 0 {
			r.MinRequests = DefaultMinRequests
		}
		if r.Probes == 0 {
			r.Probes = DefaultProbes
		}
	case AlgoAdaptiveConcurrency:
		r = r.adaptiveDefaults()
	}
	if (r.Algorithm == AlgoConcurrency || r.Algorithm == AlgoAdaptiveConcurrency) && r.Reserve == nil {
		res := DefaultReserve
		r.Reserve = &res
	} else if r.Reserve != nil {
		res := *r.Reserve
		r.Reserve = &res
	}
	if r.Level.keyed() && !r.Algorithm.isList() {
		if r.MaxKeys == 0 {
			r.MaxKeys = DefaultMaxKeys
		}
		if r.IdleTTL == 0 {
			r.IdleTTL = DefaultIdleTTL
		}
	}
	if r.Cluster != nil {
		c := *r.Cluster
		if c.Threshold == "" {
			c.Threshold = "global"
		}
		if c.Fallback == "" {
			c.Fallback = "local"
		}
		r.Cluster = &c
	}
	return r
}

// Validate reports every problem of r, joined, each a *RuleError (Index -1)
// that reads "field: message" with the rule document's field names, e.g.
// "limit: must be > 0". Zero values that have defaults are valid.
func (r Rule) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fieldProblem(field, format, args...))
	}
	switch {
	case strings.TrimSpace(r.Resource) == "":
		// A blank name cannot be told apart in logs, metrics or errors.
		bad("resource", "must not be empty or only white space")
	case !utf8.ValidString(r.Resource):
		bad("resource", "must be valid UTF-8, not %q", r.Resource)
	}
	if r.Level >= NumLevels || r.Level == LevelSystem {
		bad("level", "must be global, user, ip or param, not %v", r.Level)
	}
	if r.Algorithm >= numAlgorithms {
		bad("algorithm", "unknown %v", r.Algorithm)
	}
	switch {
	case r.Algorithm == AlgoAdaptiveConcurrency:
		if r.Limit != 0 {
			bad("limit", "does not apply to adaptive_concurrency (it finds its own; see initialLimit)")
		}
	case r.Algorithm == AlgoCircuitBreaker:
		if r.Limit != 0 {
			bad("limit", "not for circuit_breaker rules (a breaker has threshold, not limit)")
		}
	case r.Algorithm.isList():
		if r.Limit != 0 {
			bad("limit", "not for %v rules (a list has values, not limit)", r.Algorithm)
		}
	default:
		if msg := r.limitProblem(r.Limit); msg != "" {
			bad("limit", "%s", msg)
		}
	}
	if r.Window < 0 {
		bad("window", "must be >= 0, not %v", r.Window)
	} else if r.Window != 0 && r.Algorithm == AlgoAdaptiveConcurrency {
		bad("window", "does not apply to adaptive_concurrency")
	}
	r.validateAdaptive(bad)
	if r.Burst != 0 {
		switch {
		case r.Algorithm != AlgoTokenBucket && r.Algorithm != AlgoSentinelHotspot:
			bad("burst", "only for token_bucket and sentinel_hotspot rules")
		case math.IsNaN(r.Burst) || math.IsInf(r.Burst, 0) || r.Burst < 0:
			bad("burst", "must be a finite number >= 0, not %v", r.Burst)
		}
	}
	warm := r.Algorithm == AlgoWarmUp || r.Algorithm == AlgoSentinelWarmUp
	if r.Warmup != 0 && !warm {
		bad("warmup", "only for warm_up and sentinel_warm_up rules")
	} else if warm && r.Warmup <= 0 {
		bad("warmup", "must be > 0 for %v rules, not %v", r.Algorithm, r.Warmup)
	}
	if r.ColdFactor != 0 {
		switch {
		case !warm:
			bad("coldFactor", "only for warm_up and sentinel_warm_up rules")
		case math.IsNaN(r.ColdFactor) || math.IsInf(r.ColdFactor, 0) || r.ColdFactor <= 1:
			bad("coldFactor", "must be a finite number > 1, not %v", r.ColdFactor)
		case r.Algorithm == AlgoSentinelWarmUp && (r.ColdFactor != math.Trunc(r.ColdFactor) || r.ColdFactor > math.MaxUint32):
			bad("coldFactor", "must be a whole number for sentinel_warm_up (Sentinel's is an integer), not %v", r.ColdFactor)
		}
	}
	r.validateSentinelWarmUp(bad)
	r.validateSentinelHotspot(bad)
	if r.Buckets != 0 {
		switch {
		case r.Algorithm != AlgoSlidingWindow:
			bad("buckets", "only for sliding_window rules")
		case r.Buckets < 1 || r.Buckets > maxBuckets:
			bad("buckets", "must be in [1, %d], not %d", maxBuckets, r.Buckets)
		}
	}
	if d := r.WithDefaults(); d.Algorithm == AlgoSentinelWindow && (d.Window%(2*time.Millisecond) != 0 || d.Window <= 0) {
		bad("window", "must be a positive multiple of 2ms for sentinel_window (two buckets on Sentinel's millisecond clock), not %v", d.Window)
	}
	if r.Cluster != nil && r.Algorithm == AlgoSentinelWindow {
		bad("cluster", "not supported for sentinel_window (the token server counts sliding_window)")
	}
	if d := r.WithDefaults(); d.Algorithm == AlgoSlidingWindow && d.Window > 0 && d.Buckets >= 1 && d.Window < time.Duration(d.Buckets) {
		bad("window", "must be at least 1ns per bucket (%d buckets), not %v", d.Buckets, d.Window)
	}
	if r.MaxWait < 0 {
		bad("maxWait", "must be >= 0, not %v", r.MaxWait)
	} else if r.MaxWait > 0 && (r.Algorithm == AlgoConcurrency || r.Algorithm == AlgoAdaptiveConcurrency || r.Algorithm == AlgoSentinelWindow) {
		bad("maxWait", "not supported for %v rules", r.Algorithm)
	}
	keyed := r.Level.keyed()
	if r.MaxKeys < 0 {
		bad("maxKeys", "must be >= 0, not %d", r.MaxKeys)
	} else if r.MaxKeys > MaxKeysLimit {
		bad("maxKeys", "must be at most %d, not %d", MaxKeysLimit, r.MaxKeys)
	} else if r.MaxKeys != 0 && !keyed {
		bad("maxKeys", "only for user, ip and param levels")
	}
	if r.IdleTTL < 0 {
		bad("idleTTL", "must be >= 0, not %v", r.IdleTTL)
	} else if r.IdleTTL != 0 && !keyed {
		bad("idleTTL", "only for user, ip and param levels")
	}
	if c := r.Cluster; c != nil {
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
	errs = append(errs, r.breakerProblems()...)
	errs = append(errs, r.keyedProblems()...)
	return errors.Join(errs...)
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
// rule's limiter can fail with a lower package's error (warmup).
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
	case r.Algorithm == AlgoConcurrency && limit != math.Trunc(limit):
		return fmt.Sprintf("must be a whole number for concurrency, not %v", limit)
	case r.Algorithm == AlgoSlidingLog && limit > MaxSlidingLogLimit:
		return fmt.Sprintf("must be <= %d for sliding_log (it keeps limit timestamps per key), not %v", MaxSlidingLogLimit, limit)
	case r.Algorithm == AlgoSlidingWindow && limit > maxSlidingWindowLimit:
		return fmt.Sprintf("must be <= %d for sliding_window, not %v", maxSlidingWindowLimit, limit)
	}
	return ""
}
