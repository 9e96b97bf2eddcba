package flow

import (
	"errors"
	"sync/atomic"

	"github.com/flowgate/flowgate/flow/internal/algo"
)

// Reasons of the guards of outgoing calls.
const (
	// ReasonThrottled is BlockError.Reason when a client_throttle rule
	// refused a call locally because the backend stopped accepting.
	ReasonThrottled = "throttled: backend not accepting"
	// ReasonRetryBudget is BlockError.Reason when a retry_budget rule
	// refused a retry (a call entered WithRetry).
	ReasonRetryBudget = "retry budget exhausted"
)

// ErrOverloaded marks a backend's refusal for overload: an HTTP 429 or
// 503, a gRPC UNAVAILABLE or RESOURCE_EXHAUSTED. A call whose Exit carries
// an error that matches it (WithError(err), errors.Is(err, ErrOverloaded))
// counts as not accepted at its client_throttle rules; every other outcome,
// other errors included, counts as accepted: the backend answered.
var ErrOverloaded = errors.New("flow: backend overloaded")

// WithRetry marks the call as a retry of an earlier attempt: a
// retry_budget rule takes one retry from its budget for it (or refuses
// it), where a first attempt deposits into the budget instead.
func WithRetry() EntryOption { return EntryOption{kind: optRetry} }

// withSeed seeds the engine's client throttles, so that a test's run
// repeats exactly.
func withSeed(seed uint64) Option { return func(cf *config) { cf.seed = seed } }

// outboundStats are a retry_budget rule's counts since it was loaded.
type outboundStats struct {
	firsts  atomic.Uint64 // first attempts (deposits)
	retries atomic.Uint64 // retries admitted
}

// throttleUse is a client_throttle a call passed: Exit tells it the answer.
type throttleUse struct {
	t *algo.Throttle
}

// throttle asks cr, a client_throttle, whether the call may go out. The
// request is counted whatever the answer (Google SRE counts the client's
// attempts); a passed call is told to the throttle again at Exit, with the
// backend's answer, and given back if a later check refuses it.
func (st *entryState) throttle(cr *compiledRule, key string) bool {
	if key == "" && cr.keyed {
		return true
	}
	lim, err := cr.limiterFor(key, st.now)
	t, _ := lim.(*algo.Throttle)
	if err != nil || t == nil {
		st.eng.logError("flow: building client throttle", err, cr)
		return true
	}
	d := t.TryAcquire(st.now, 1, 0)
	if !d.OK() && !st.deny(cr, ReasonThrottled, key, d) {
		return false
	}
	// A call a shadow throttle would have refused goes on: it too is told
	// the answer, or the shadow rule would count requests without accepts.
	c := st.rec()
	if d.OK() {
		c.taken = append(c.taken, takenLim{lim: t, cr: cr, at: st.now})
	}
	c.thr = append(c.thr, throttleUse{t: t})
	return true
}

// budget passes a first attempt through cr, a retry_budget, depositing
// into it, and takes a retry (WithRetry) from it or refuses the call.
func (st *entryState) budget(cr *compiledRule, key string) bool {
	if key == "" && cr.keyed {
		return true
	}
	lim, err := cr.limiterFor(key, st.now)
	b, _ := lim.(*algo.Budget)
	if err != nil || b == nil {
		st.eng.logError("flow: building retry budget", err, cr)
		return true
	}
	if !st.a.retry {
		// A first attempt refused by a later check still deposits: the
		// deposit is a small share, and a refund would need a record.
		b.Deposit(st.now, 1)
		cr.out.firsts.Add(1)
		return true
	}
	d := b.TryAcquire(st.now, 1, 0)
	if !d.OK() {
		return st.deny(cr, ReasonRetryBudget, key, d)
	}
	cr.out.retries.Add(1)
	c := st.rec()
	c.taken = append(c.taken, takenLim{lim: b, cr: cr, at: st.now})
	return true
}

// exitThrottles tells every throttle the call passed whether the backend
// accepted it, at the call's start (its request's bucket).
func (c *call) exitThrottles(opts []ExitOption) {
	accepted := true
	for i := range opts {
		if opts[i].err != nil && errors.Is(opts[i].err, ErrOverloaded) {
			accepted = false
		}
	}
	for i := range c.thr {
		c.thr[i].t.Record(c.start, accepted)
		c.thr[i] = throttleUse{}
	}
	c.thr = c.thr[:0]
}

// OutboundStats describes a client_throttle or retry_budget rule.
type OutboundStats struct {
	// Requests and Accepts are a client_throttle's counts over its window
	// now (requests include those it refused), and RefuseProbability the
	// chance it refuses the next call. Global rules only.
	Requests, Accepts, RefuseProbability float64
	// FirstAttempts and Retries are the calls a retry_budget passed since
	// it was loaded, Balance the retries it would allow now (global rules).
	FirstAttempts, Retries uint64
	Balance                float64
	// Refused counts the calls the rule refused since it was loaded: a
	// throttle's local refusals, a budget's refused retries.
	Refused uint64
}

// outboundStats reads cr, an outbound rule, at now.
func (cr *compiledRule) outboundStats(now int64) OutboundStats {
	s := OutboundStats{FirstAttempts: cr.out.firsts.Load(), Retries: cr.out.retries.Load(), Refused: cr.refused.Load()}
	switch g := cr.global.(type) {
	case *algo.Throttle:
		s.Requests, s.Accepts = g.Counts(now)
		s.RefuseProbability = algo.RejectProbability(s.Requests, s.Accepts, cr.rule.K)
	case *algo.Budget:
		s.Balance = g.Remaining(now)
	}
	return s
}
