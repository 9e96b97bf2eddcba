package flow

// This file holds the Rule-level parts of adaptive_concurrency and of
// priority reserves: defaults and validation. The limiter is in
// internal/algo/adaptive_concurrency.go, the classes in priority.go.

// reserveOf is r's reserve, the default when it sets none.
func reserveOf(r *Rule) Reserve {
	if r.Reserve != nil {
		return *r.Reserve
	}
	return DefaultReserve
}

// validateAdaptive checks that an adaptive_concurrency rule's limits,
// defaults filled, are in order: minLimit <= initialLimit <= maxLimit (the
// table of fields, rule_table.go, checks each alone).
func (r Rule) validateAdaptive(bad func(field, format string, args ...any)) {
	if r.Algorithm != AlgoAdaptiveConcurrency {
		return
	}
	d := r.WithDefaults()
	if d.MinLimit > d.MaxLimit && d.MinLimit > 0 && d.MaxLimit > 0 {
		bad("minLimit", "must be <= maxLimit (%d), not %d", d.MaxLimit, d.MinLimit)
	} else if d.InitialLimit > 0 && d.MinLimit > 0 && d.MaxLimit > 0 && (d.InitialLimit < d.MinLimit || d.InitialLimit > d.MaxLimit) {
		bad("initialLimit", "must be within [minLimit, maxLimit] = [%d, %d], not %d", d.MinLimit, d.MaxLimit, d.InitialLimit)
	}
}
