package flow

import "math"

// maxBreakerCount bounds an error_count threshold and MinRequests: the
// window keeps 20-bit counts per bucket (see breakerWindow).
const maxBreakerCount = 100000

// breakerProblems checks the circuit breaker fields: on a breaker, the
// ones it needs; on any other rule, that none is set.
func (r *Rule) breakerProblems() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fieldProblem(field, format, args...))
	}
	if r.Algorithm != AlgoCircuitBreaker {
		for _, f := range []struct {
			name string
			set  bool
		}{{"strategy", r.Strategy != 0}, {"threshold", r.Threshold != 0}, {"minRequests", r.MinRequests != 0},
			{"openFor", r.OpenFor != 0}, {"probes", r.Probes != 0}, {"slowCall", r.SlowCall != 0}} {
			if f.set {
				bad(f.name, "only for circuit_breaker rules")
			}
		}
		return errs
	}
	if r.MaxWait != 0 {
		bad("maxWait", "not for circuit_breaker rules")
	}
	if r.Adaptive {
		bad("adaptive", "not for circuit_breaker rules")
	}
	if r.Cluster != nil {
		bad("cluster", "not for circuit_breaker rules: breakers are per instance")
	}
	if r.Window != 0 && r.Window < minBreakerWd {
		bad("window", "must be at least %v for circuit_breaker rules, not %v", minBreakerWd, r.Window)
	}
	switch {
	case r.Strategy == 0:
		bad("strategy", "required for circuit_breaker rules (error_ratio, error_count or slow_ratio)")
	case r.Strategy >= numStrategies:
		bad("strategy", "unknown %v", r.Strategy)
	}
	t := r.Threshold
	switch {
	case math.IsNaN(t) || math.IsInf(t, 0):
		bad("threshold", "must be a finite number, not %v", t)
	case t == 0:
		bad("threshold", "required for circuit_breaker rules")
	case r.Strategy == BreakerErrorCount && (t < 1 || t != math.Trunc(t) || t > maxBreakerCount):
		bad("threshold", "must be a whole count in [1, %d] for error_count, not %v", maxBreakerCount, t)
	case r.Strategy != BreakerErrorCount && (t <= 0 || t > 1):
		bad("threshold", "must be a ratio in (0, 1] for %v, not %v", r.Strategy, t)
	}
	if r.MinRequests < 0 || r.MinRequests > maxBreakerCount {
		bad("minRequests", "must be in [1, %d], not %d", maxBreakerCount, r.MinRequests)
	}
	if r.OpenFor <= 0 {
		bad("openFor", "required for circuit_breaker rules (> 0), not %v", r.OpenFor)
	}
	if r.Probes < 0 || r.Probes > MaxProbes {
		bad("probes", "must be in [1, %d], not %d", MaxProbes, r.Probes)
	}
	switch {
	case r.Strategy == BreakerSlowRatio && r.SlowCall <= 0:
		bad("slowCall", "required for slow_ratio (> 0), not %v", r.SlowCall)
	case r.Strategy != BreakerSlowRatio && r.SlowCall != 0:
		bad("slowCall", "only for the slow_ratio strategy")
	}
	return errs
}
