package flow

import (
	"context"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/flow/internal/algo"
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
	// spent. The engine calls it on Exit when res holds something to
	// release (a concurrency rule, or a Lease), and on every Exit that
	// settles the call's actual cost (req.Settle, see TokenRequest): one
	// call then releases and settles.
	Release(ctx context.Context, req TokenRequest, res TokenResult) error
	// Instances is the number of live instances (>= 1) the local fallback
	// divides a "global" limit by. A count below the truth over-admits
	// (every instance takes a larger share), so an implementation unsure
	// of the count reports the higher one.
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
	// Settle, on Release at Exit only (Refund false), settles the call at
	// its actual cost, Actual permits (flow.WithActualCost), against the
	// Tokens it reserved: each rule that can carry it is charged the
	// difference (a debt later calls pay, never more than the rule's
	// MaxDebt owed) or given back the unused part, as the local algorithm
	// would (docs/cost.md), in the window res.At falls in; a concurrency
	// rule settles nothing (its permits are released as without Settle).
	// A token server that cannot settle ignores it: the call's cost then
	// stays as reserved.
	Settle bool
	Actual int // the call's actual cost when Settle, >= 0
}

// TokenResult is the token server's answer.
type TokenResult struct {
	Allowed    bool          // every rule of the request admitted the call
	Refused    int           // index into Rules of the rule that refused; -1 when allowed
	Remaining  float64       // permits left at the most restrictive rule, for Quota and headers
	Wait       time.Duration // allowed leaky-bucket slot: the engine waits this long (honouring ctx)
	RetryAfter time.Duration // refused: honest time until it would pass; 0 unknown; Never: it can never pass
	Lease      string        // opaque; names the call's concurrency permits for Release
	// Stripe is the stripe of a striped rule (Rule.Stripes) the permits
	// were taken from, so that Release gives them back there; 0 otherwise.
	Stripe int
	// At is when the server counted the permits, on its own clock and in
	// its own unit (opaque to the engine; 0 unknown): a settling Release
	// adjusts the window they were counted in, and nothing once it closed.
	At int64
}

// ClusterStats counts token server outcomes.
type ClusterStats struct {
	Requests  map[string]uint64 // "passed", "blocked", "error"
	Fallbacks map[string]uint64 // "local", "allow", "deny"
}

// cluster asks the token server for one group of cluster rules of a
// level, for key, and applies each rule's fallback when it cannot answer.
func (st *entryState) cluster(g *clusterGroup, level Level, key string) bool {
	e := st.eng
	if key == "" && g.staysLocal(st.now) {
		return st.stayLocal(g)
	}
	// The boost never raises a cluster rule.
	req := TokenRequest{Resource: st.rr.name, Level: level, Key: key, Tokens: st.a.tokens, Rules: g.rules, Factor: min(e.AdaptiveFactor(), 1)}
	own := 0.0
	if key == "" {
		own = g.tally(st.now) // before asking (see answered)
	}
	res, err := e.cf.ts.Acquire(st.a.context(), req)
	if err != nil {
		return st.clusterFallback(g, key, err)
	}
	if !res.Allowed {
		if key == "" {
			g.answered(&res, req.Tokens, req.Factor, st.now, e.now(), own) // a refusal's Remaining shows a loss too
		}
		e.cl.blocked.Add(1)
		i := res.Refused
		if i < 0 || i >= len(g.crs) {
			i = 0
		}
		d := algo.Decision{Verdict: algo.Refused, Wait: max(0, res.RetryAfter), Remaining: res.Remaining}
		if res.RetryAfter == Never {
			d.Verdict = algo.Never
		}
		return st.deny(g.crs[i], ReasonClusterLimited, "", d)
	}
	if key == "" && g.answered(&res, req.Tokens, req.Factor, st.now, e.now(), own) {
		// Redis lost the window's count: give this grant back and decide
		// the call locally, as the rest of the window will be.
		req.Refund = true
		_ = e.cf.ts.Release(st.a.context(), req, res)
		return st.stayLocal(g)
	}
	e.cl.passed.Add(1)
	if e.cl.outage.down.Load() {
		e.cl.outage.up(e, st.now)
	}
	c := st.rec()
	grant := clusterGrant{req: req, res: res, release: g.conc || res.Lease != ""}
	if key == "" {
		grant.tallied, grant.at = g, st.now
	}
	c.grants = append(c.grants, grant)
	st.note(tightest(g.crs), max(0, res.Wait), res.Remaining, 0)
	return true
}

// clusterFallback decides g's rules by their fallback policies while the
// token server cannot answer.
func (st *entryState) clusterFallback(g *clusterGroup, key string, err error) bool {
	e := st.eng
	e.cl.errors.Add(1)
	e.cl.outage.failed(e, err, g.crs[0], st.now)
	n := max(1, e.cf.ts.Instances())
	for _, cr := range g.crs {
		switch cr.rule.Cluster.Fallback {
		case "allow":
			e.cl.fbAllow.Add(1)
		case "deny":
			e.cl.fbDeny.Add(1)
			if !st.deny(cr, ReasonClusterUnavailable, "", algo.Decision{}) {
				return false
			}
		default:
			e.cl.fbLocal.Add(1)
			cr.recompute(e.AdaptiveFactor(), n)
			if cr.fallbackResumes(e.cl.passed.Load()) {
				drainLocal(cr, key, st.now)
			}
			if !st.localFor(cr, key) {
				return false
			}
		}
	}
	return true
}

// A global fixed_window rule's outage window can hold three parts: what
// Redis admitted in it before the fault, what the local fallback admitted
// during it, and what Redis admits after it. When Redis comes back without
// the window's count (restarted without persistence, a replica promoted
// before it had the last writes, FLUSHALL), the third part is a whole
// limit again: three limits in one window. An instance sees that loss in
// Redis's own answer: Redis's count of the window can never be below what
// it admitted to this instance in it, so a Remaining above limit minus
// that means the count was lost (the instance's own refunds, of refused
// calls and of settlements below the reservation, come off its tally: see
// untally). The instance then gives that answer's permit back,
// decides the rule locally, at its share, until the window ends, and asks
// Redis again in the next: the window holds at most what Redis admitted
// before and one limit locally. A Redis that kept its count (a pause, a
// busy host, SCRIPT FLUSH, a restart with persistence) is asked again at
// once. Only the global level (a per-key record would cost a table) and
// windows up to maxStayWindow.
//
// Two things would make a kept count look lost; the check rules both out:
//   - an instance's concurrent answers are taken in out of order (Redis
//     answers A, then B; B's goroutine runs first), so the tally compared
//     is the one from before the call asked: every grant in it was given
//     before the call reached Redis;
//   - a call that reached Redis after its window ended finds the next
//     window's count, so an answer taken in after the call's window ended
//     is neither judged nor counted.
// The check trusts the instance's clock to agree with Redis's: one running
// ahead counts grants from the end of Redis's window in its next, and may
// then decide that window locally when nothing was lost.

// maxStayWindow bounds the windows whose rule stays local after a lost
// count: a longer window would keep Redis out for too long (its lost count
// then costs what a FLUSHALL costs).
const maxStayWindow = 10 * time.Second

// window is the fixed window now falls in for a global fixed_window rule
// with threshold global, the local fallback and a window of at most
// maxStayWindow; ok is false for every other rule.
func (cr *compiledRule) window(now int64) (w int64, ok bool) {
	c := cr.rule.Cluster
	// per_instance: Redis's limit grows with the instances, so Remaining
	// says nothing against Limit.
	if cr.keys != nil || c == nil || c.Fallback == "allow" || c.Fallback == "deny" || c.Threshold == "per_instance" ||
		cr.rule.Window > maxStayWindow {
		return 0, false
	}
	fw, ok := cr.global.(algo.Windowed)
	if !ok {
		return 0, false
	}
	return fw.Window(now), true
}

// tallyBits packs a window index (low 32 bits of it) and a count.
const tallyBits = 32

// tally is what Redis has admitted to this instance in now's window, by
// the answers taken in so far; 0 for a group answered does not judge.
func (g *clusterGroup) tally(now int64) float64 {
	if len(g.crs) != 1 {
		return 0
	}
	w, ok := g.crs[0].window(now)
	own := g.crs[0].redisTally.Load()
	if !ok || own>>tallyBits != uint64(uint32(w)) {
		return 0 // a new window: nothing admitted in it yet
	}
	return float64(own & (1<<tallyBits - 1))
}

// answered takes in the token server's answer res to a call for n
// permits at now, taken in at back, when the tally was own (see tally): it
// counts what Redis admitted to this instance in the window and reports a
// lost count (see above). One rule per group: Remaining is the tightest
// rule's.
func (g *clusterGroup) answered(res *TokenResult, n int, factor float64, now, back int64, own float64) (lost bool) {
	if len(g.crs) != 1 {
		return false
	}
	cr := g.crs[0]
	w, ok := cr.window(now)
	if wb, _ := cr.window(back); !ok || wb != w {
		return false // Redis may have counted it in the next window
	}
	tag := uint64(uint32(w)) << tallyBits
	limit := cr.rule.Limit
	if cr.rule.Adaptive {
		limit *= factor
	}
	// Remaining counts this call when admitted: before it, n more.
	before := res.Remaining
	if res.Allowed {
		before += float64(n)
	}
	if before > math.Floor(limit+1e-9)-own {
		if cr.stayWin.Load() != w {
			cr.stayWin.Store(w)
		}
		return true
	}
	if !res.Allowed {
		return false
	}
	for old := cr.redisTally.Load(); ; old = cr.redisTally.Load() {
		next := tag + uint64(n)
		if old>>tallyBits<<tallyBits == tag {
			next = old + uint64(n)
		}
		if cr.redisTally.CompareAndSwap(old, next) {
			return false
		}
	}
}

// untally takes n permits that Redis gave back (a refund, a settlement
// below the reservation) out of the tally of at's window, so that the
// lower count Redis then reports does not read as a loss. A charge is not
// added: a tally below Redis's count only makes the check miss a loss of
// that size. A nil g, a group that keeps no tally or a window that has
// ended take nothing.
func (g *clusterGroup) untally(at int64, n int) {
	if g == nil || len(g.crs) != 1 || n <= 0 {
		return
	}
	cr := g.crs[0]
	w, ok := cr.window(at)
	if !ok {
		return
	}
	tag := uint64(uint32(w)) << tallyBits
	for old := cr.redisTally.Load(); old>>tallyBits<<tallyBits == tag; old = cr.redisTally.Load() {
		count := old & (1<<tallyBits - 1)
		if cr.redisTally.CompareAndSwap(old, tag+count-min(count, uint64(n))) {
			return
		}
	}
}

// staysLocal reports whether g's rules are decided locally until the
// window ends (see above): every rule of g falls back locally, and one of
// them lost its count in this window.
func (g *clusterGroup) staysLocal(now int64) bool {
	stay := false
	for _, cr := range g.crs {
		if f := cr.rule.Cluster.Fallback; f == "allow" || f == "deny" {
			return false
		}
		if w, ok := cr.window(now); ok && cr.stayWin.Load() == w {
			stay = true
		}
	}
	return stay
}

// stayLocal decides g's rules by their local fallback limiters without
// asking the token server.
func (st *entryState) stayLocal(g *clusterGroup) bool {
	e := st.eng
	n := max(1, e.cf.ts.Instances())
	for _, cr := range g.crs {
		e.cl.fbLocal.Add(1)
		cr.recompute(e.AdaptiveFactor(), n)
		if !st.localFor(cr, "") {
			return false
		}
	}
	return true
}

// The local fallback of a token_bucket cluster rule sits unused while Redis
// answers, and a bucket left alone fills up: at the next outage every
// instance would admit a full burst share at once on top of what Redis had
// just admitted (the fleet: Redis's burst and rate plus one more burst).
// So when the fallback resumes after the token server answered, its bucket
// is emptied first and earns permits at the instance's share of the rate
// from then on: an outage second then admits at most what Redis admitted
// before the fault plus one cluster rate, as for fixed_window.

// fallbackResumes reports whether the token server answered any call
// (passed, the engine's count of admitted answers) since this rule's last
// local fallback call: one load per fallback call, a write only when an
// outage begins. Racing callers may both see a resume; draining twice is
// harmless.
func (cr *compiledRule) fallbackResumes(passed uint64) bool {
	if cr.fallbackPassed.Load() == passed {
		return false
	}
	return cr.fallbackPassed.Swap(passed) != passed
}

// drainLocal empties the plain token bucket the fallback is about to use
// (warm-up buckets stay: their stored permits are the cold state, not a
// burst, and taking them would slow the next callers instead).
func drainLocal(cr *compiledRule, key string, now int64) {
	lim, err := cr.limiterFor(key, now)
	if err != nil {
		return
	}
	if b, ok := lim.(*algo.Bucket); ok {
		b.Drain(now)
	}
}

// tightest is the cluster rule with the lowest rate: the token server's
// Remaining is counted at the most constrained rule, so Quota credits it
// to that one.
func tightest(crs []*compiledRule) *compiledRule {
	best, bestRate := crs[0], 0.0
	for i, cr := range crs {
		w := cr.rule.Window
		if w <= 0 {
			w = time.Second
		}
		if r := cr.limit() / w.Seconds(); i == 0 || r < bestRate {
			best, bestRate = cr, r
		}
	}
	return best
}

// outageLog logs a token server outage as it changes, never per call: the
// first failure, a summary every outageSummaryEvery while it lasts, and
// the first answer after it. Lock-free: a failed call costs a load and,
// rarely, one CAS.
type outageLog struct {
	down        atomic.Bool
	since, last atomic.Int64 // clock.Nanotime: outage start, last line
	errorsAt    atomic.Uint64
}

const outageSummaryEvery = 10 * time.Second

func (o *outageLog) failed(e *Engine, err error, cr *compiledRule, now int64) {
	if e.cf.log == nil {
		return
	}
	if !o.down.Load() && o.down.CompareAndSwap(false, true) {
		o.since.Store(now)
		o.last.Store(now)
		o.errorsAt.Store(e.cl.errors.Load() - 1)
		e.cf.log.Warn("flow: token server unavailable; cluster rules use their fallback",
			slog.String("rule", cr.rule.ID), slog.String("resource", cr.rule.Resource), slog.Any("error", err))
		return
	}
	last := o.last.Load()
	if now-last >= int64(outageSummaryEvery) && o.last.CompareAndSwap(last, now) {
		e.cf.log.Warn("flow: token server still unavailable",
			slog.Duration("for", time.Duration(now-o.since.Load())),
			slog.Uint64("failed_calls", e.cl.errors.Load()-o.errorsAt.Load()), slog.Any("error", err))
	}
}

func (o *outageLog) up(e *Engine, now int64) {
	if o.down.CompareAndSwap(true, false) {
		e.cf.log.Info("flow: token server answers again",
			slog.Duration("after", time.Duration(now-o.since.Load())),
			slog.Uint64("failed_calls", e.cl.errors.Load()-o.errorsAt.Load()))
	}
}
