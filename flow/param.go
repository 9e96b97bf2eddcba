package flow

import "math"

// compileItems builds a keyed rule's per-value exceptions: each is the rule
// itself with the item's Limit (a token bucket's Burst scaled alike, so an
// item keeps the rule's Burst/Limit ratio) and one limiter of its own, not
// a key table: an item is one value. They share the rule's ID, so a refusal
// names the rule, and follow its adaptive factor and cluster share
// (compiledRule.recompute).
func (e *Engine) compileItems(cr *compiledRule, factor float64, instances int, now int64) error {
	if len(cr.rule.Items) == 0 {
		return nil
	}
	cr.items = make(map[string]*compiledRule, len(cr.rule.Items))
	for value, limit := range cr.rule.Items {
		r := cr.rule.withItemLimit(limit)
		it := &compiledRule{rule: r, clk: cr.clk, cluster: cr.cluster, refusers: cr.refusers, dynamic: cr.dynamic,
			classed: cr.classed, holds: cr.holds, learns: cr.learns, shares: cr.shares, parent: cr}
		it.limitBits.Store(math.Float64bits(math.NaN())) // so recompute always sets it
		it.recompute(factor, instances)
		it.gen.Store(0)
		lim, err := it.newLimiter(now)
		if err != nil {
			return err
		}
		it.global = lim
		if it.cluster {
			it.solo = soloGroup(it)
		}
		cr.items[value] = it
	}
	return nil
}

// ForItem returns the rule that decides value: r with the item's limit
// (a token bucket's Burst scaled alike, so the item keeps the rule's
// Burst/Limit ratio) and no Items, and true; r itself and false when value
// is none of r's Items. The engine decides an item value with this rule
// and asks a token server with it; a token server that resolves rules by
// id (cluster/tokenrpc) derives the same rule from the document it serves.
func (r Rule) ForItem(value string) (Rule, bool) {
	limit, ok := r.Items[value]
	if !ok {
		return r, false
	}
	return r.withItemLimit(limit), true
}

func (r Rule) withItemLimit(limit float64) Rule {
	if r.Algorithm == AlgoTokenBucket {
		r.Burst = r.Burst * limit / r.Limit
	}
	r.BoostLimit = r.BoostLimit * limit / r.Limit // the item keeps the rule's boost headroom
	r.Items, r.Limit = nil, limit
	return r
}

// forKey is the rule that decides key: its item when it has one, else cr.
func (cr *compiledRule) forKey(key string) *compiledRule {
	if cr.items != nil {
		if it := cr.items[key]; it != nil {
			return it
		}
	}
	return cr
}

// soloGroup is a clusterGroup holding cr alone, built once, for a cluster
// param rule: each param rule has keys of its own (its parameter's
// values), so the token server is asked rule by rule, not per level.
// Shadow or not, it is the same group: deny reads cr.shadow per call.
func soloGroup(cr *compiledRule) *clusterGroup {
	g := &clusterGroup{}
	g.add(cr)
	return g
}

// setShadow sets cr's shadow flag and its items' (an item decides for its
// rule, so it shadows when its rule does).
func (cr *compiledRule) setShadow(on bool) {
	cr.shadow.Store(on)
	for _, it := range cr.items {
		it.shadow.Store(on)
	}
}

// owner is the rule whose counts cr's decisions go to: an item's rule, or
// cr itself.
func (cr *compiledRule) owner() *compiledRule {
	if cr.parent != nil {
		return cr.parent
	}
	return cr
}
