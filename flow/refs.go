package flow

import "time"

// A RefResource rule (Sentinel's associated strategy) decides the calls of
// its Resource on the traffic of another resource, e.g. writes while reads
// are hot. Its limiter is fed by the other resource: every call admitted
// there (with its WithTokens count) is taken from the rule's limiter,
// whether that succeeds or not, and nothing is ever refused there because
// of it. A call of Resource is refused while that limiter has no permit
// left: exactly when one more call of the other resource would have been
// refused by the rule's algorithm, limit and window. With fixed_window and
// limit 500, writes are refused from the 500th read of a window to its end;
// with token_bucket, while reads have drained the bucket. The call itself
// takes nothing from it (a check, given back at once).
//
// The other resource need not have rules of its own; its admitted calls
// then appear in the statistics like those of a resource with rules.

// ref refuses the call when cr, a RefResource rule, has no permit left.
// The check takes nothing (a permit taken is given back at once). A
// shadow rule's limiter is fed by the other resource as an enforcing
// one's is, so it counts exactly what that one would refuse.
func (st *entryState) ref(cr *compiledRule) bool {
	lim, _ := cr.limiterFor("", st.now) // global: never fails
	d := lim.TryAcquire(st.now, 1, 0)
	if !d.OK() {
		return st.deny(cr, ReasonRefResourceHot, "", d)
	}
	lim.Refund(st.now, 1)
	return true
}

// feedObservers counts an admitted call of a resource in the limiters of
// the RefResource rules that watch it.
func feedObservers(rr *resourceRules, now int64, tokens int) {
	for _, cr := range rr.observers {
		lim, _ := cr.limiterFor("", now)
		lim.TryAcquire(now, tokens, 0)
	}
}

// ReasonRefResourceHot is BlockError.Reason when a RefResource rule
// refused: the other resource's traffic used up the rule's limit.
const ReasonRefResourceHot = "related resource over limit"

// linkRefs gives every resource watched by a RefResource rule the list of
// those rules, creating an entry for a resource with no rules of its own.
func (rs *ruleSet) linkRefs(stats map[string]*resourceStats, window time.Duration, buckets int) {
	for _, cr := range rs.compiled {
		ref := cr.rule.RefResource
		if ref == "" {
			continue
		}
		rr := rs.byResource[ref]
		if rr == nil {
			st := stats[ref]
			if st == nil {
				st = newResourceStats(ref, window, buckets)
				stats[ref] = st
			}
			rr = newResourceRules(ref, st)
			rs.byResource[ref] = rr
		}
		rr.observers = append(rr.observers, cr)
	}
}
