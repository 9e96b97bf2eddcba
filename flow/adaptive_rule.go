package flow

import "math"

// This file holds the Rule-level parts of adaptive_concurrency and of
// priority reserves: defaults and validation. The limiter is in
// internal/algo/adaptive_concurrency.go, the classes in priority.go.

// adaptiveDefaults fills the adaptive_concurrency fields left zero.
func (r Rule) adaptiveDefaults() Rule {
	if r.InitialLimit == 0 {
		r.InitialLimit = DefaultInitialLimit
	}
	if r.MinLimit == 0 {
		r.MinLimit = DefaultMinLimit
	}
	if r.MaxLimit == 0 {
		r.MaxLimit = max(DefaultMaxLimit, r.InitialLimit)
	}
	if r.Tolerance == 0 {
		r.Tolerance = DefaultTolerance
	}
	if r.Smoothing == 0 {
		r.Smoothing = DefaultSmoothing
	}
	return r
}

// reserveOf is r's reserve, the default when it sets none.
func reserveOf(r *Rule) Reserve {
	if r.Reserve != nil {
		return *r.Reserve
	}
	return DefaultReserve
}

// validateAdaptive reports the problems of the adaptive_concurrency fields
// and of reserve: wrong values, and fields set on rules they do not apply to.
func (r Rule) validateAdaptive(bad func(field, format string, args ...any)) {
	adaptive := r.Algorithm == AlgoAdaptiveConcurrency
	for _, f := range []struct {
		name string
		v    int
	}{{"initialLimit", r.InitialLimit}, {"minLimit", r.MinLimit}, {"maxLimit", r.MaxLimit}} {
		switch {
		case f.v == 0:
		case !adaptive:
			bad(f.name, "only for adaptive_concurrency rules")
		case f.v < 0 || f.v > math.MaxInt32:
			bad(f.name, "must be in [1, %d], not %d", math.MaxInt32, f.v)
		}
	}
	if adaptive {
		d := r.adaptiveDefaults()
		if d.MinLimit > d.MaxLimit && d.MinLimit > 0 && d.MaxLimit > 0 {
			bad("minLimit", "must be <= maxLimit (%d), not %d", d.MaxLimit, d.MinLimit)
		} else if d.InitialLimit > 0 && d.MinLimit > 0 && d.MaxLimit > 0 && (d.InitialLimit < d.MinLimit || d.InitialLimit > d.MaxLimit) {
			bad("initialLimit", "must be within [minLimit, maxLimit] = [%d, %d], not %d", d.MinLimit, d.MaxLimit, d.InitialLimit)
		}
		if r.Adaptive {
			bad("adaptive", "does not apply to adaptive_concurrency (its limit adapts by itself)")
		}
		if r.Cluster != nil {
			bad("cluster", "not supported for adaptive_concurrency (each instance finds its own limit)")
		}
	}
	for _, f := range []struct {
		name   string
		v      float64
		lo, hi float64
		rng    string
	}{{"tolerance", r.Tolerance, 1, 100, "[1, 100]"}, {"smoothing", r.Smoothing, 0, 1, "(0, 1]"}} {
		switch {
		case f.v == 0:
		case !adaptive:
			bad(f.name, "only for adaptive_concurrency rules")
		case math.IsNaN(f.v) || f.v < f.lo || f.v > f.hi:
			bad(f.name, "must be in %s, not %v", f.rng, f.v)
		}
	}
	if r.Reserve != nil {
		if !adaptive && r.Algorithm != AlgoConcurrency {
			bad("reserve", "only for concurrency and adaptive_concurrency rules")
		} else {
			r.Reserve.validate(bad)
		}
	}
}
