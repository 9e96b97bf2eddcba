package flow

import (
	"context"
	"time"
)

// TokenServer decides cluster rules for every instance of a service (package
// cluster implements it on Redis). The engine never imports Redis.
type TokenServer interface {
	// Acquire decides, in ONE atomic step, every cluster rule of one level
	// that applies to one key.
	Acquire(ctx context.Context, req TokenRequest) (TokenResult, error)
	// Release undoes what an admitted Acquire (res) took, as req.Refund
	// says: with Refund (a later level refused the call) every rule's
	// permits come back, rate tokens and concurrency permits alike; without
	// it (Exit) only concurrency permits are released and rate tokens stay
	// spent. The engine calls it on Exit only when res holds something to
	// release (a concurrency rule, or a Lease).
	Release(ctx context.Context, req TokenRequest, res TokenResult) error
	// Instances is the last known number of live instances (>= 1), for the
	// local fallback at Limit/Instances().
	Instances() int
}

// TokenRequest asks the token server for the cluster rules of one level.
type TokenRequest struct {
	Resource string  // the resource being entered
	Level    Level   // the level whose cluster rules are asked
	Key      string  // user id or IP; "" at the global level
	Tokens   int     // permits asked of every rule (WithTokens), >= 1
	Rules    []*Rule // the cluster rules of this level, immutable, shared: do not modify
	Factor   float64 // adaptive factor to apply to adaptive rules' limits
	// Refund, on Release only, means the call was refused after this level
	// admitted it: give back every rule's permits. False on Exit: release
	// concurrency permits only. Acquire ignores it.
	Refund bool
}

// TokenResult is the token server's answer.
type TokenResult struct {
	Allowed    bool          // every rule of the request admitted the call
	Refused    int           // index into Rules of the rule that refused; -1 when allowed
	Remaining  float64       // permits left at the most restrictive rule, for Quota and headers
	Wait       time.Duration // allowed leaky-bucket slot: the engine waits this long (honouring ctx)
	RetryAfter time.Duration // refused: honest time until it would pass; 0 unknown
	Lease      string        // opaque; names the call's concurrency permits for Release
}

// ClusterStats counts token server outcomes.
type ClusterStats struct {
	Requests  map[string]uint64 // "passed", "blocked", "error"
	Fallbacks map[string]uint64 // "local", "allow", "deny"
}

// clusterLevel asks the token server for one group of cluster rules of a
// level, and applies each rule's fallback when it cannot answer. A shadow
// group (all shadow rules) only counts its refusals (refuseOr).
func (e *Engine) clusterLevel(a *entryArgs, resource string, rr *resourceRules, level Level, g *clusterGroup, key string, st *entryState) error {
	ts := e.cf.ts
	req := TokenRequest{Resource: resource, Level: level, Key: key, Tokens: st.tokens, Rules: g.rules, Factor: e.AdaptiveFactor()}
	res, err := ts.Acquire(a.context(), req)
	if err == nil {
		if !res.Allowed {
			e.cl.blocked.Add(1)
			i := res.Refused
			if i < 0 || i >= len(g.crs) {
				i = 0
			}
			d := decision{retryAfter: max(0, res.RetryAfter), remaining: res.Remaining}
			return e.refuseOr(resource, rr, g.crs[i], d, ReasonClusterLimited, st)
		}
		e.cl.passed.Add(1)
		st.grants = append(st.grants, clusterGrant{req: req, res: res, release: g.conc || res.Lease != ""})
		st.noteUnlessShadow(g.crs[0], max(0, res.Wait), res.Remaining, 0)
		return nil
	}
	e.cl.errors.Add(1)
	e.logError("flow: token server acquire", err, g.crs[0])
	n := max(1, ts.Instances())
	for _, cr := range g.crs {
		switch cr.rule.Cluster.Fallback {
		case "allow":
			e.cl.fbAllow.Add(1)
		case "deny":
			e.cl.fbDeny.Add(1)
			if err := e.refuseOr(resource, rr, cr, decision{}, ReasonClusterUnavailable, st); err != nil {
				return err
			}
		default:
			e.cl.fbLocal.Add(1)
			cr.recompute(e.AdaptiveFactor(), n)
			lim, err := cr.limiterFor(key, st.now)
			if err != nil {
				e.logError("flow: building limiter", err, cr)
				continue
			}
			d := lim.tryAcquire(st.now, st.tokens, cr.rule.MaxWait)
			if !d.ok {
				if err := e.refuseOr(resource, rr, cr, d, cr.reason, st); err != nil {
					return err
				}
				continue
			}
			st.take(takenLim{lim: lim, at: st.now + int64(d.wait), conc: cr.rule.Algorithm == AlgoConcurrency})
			st.noteUnlessShadow(cr, d.wait, d.remaining, d.reset)
		}
	}
	return nil
}
