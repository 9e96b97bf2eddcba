package flow

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/flowgate/flowgate/flow/internal/algo"
)

// ReasonBreakerOpen is BlockError.Reason when an open (or half-open, with
// every probe out) circuit breaker refused the call.
const ReasonBreakerOpen = "circuit breaker open"

// BreakerEvent is one state change of a circuit breaker, given to the
// listener of WithBreakerListener.
type BreakerEvent struct {
	Time     time.Time // on the engine's clock
	Resource string
	RuleID   string
	Level    Level
	// Key is the user or IP of a per-key breaker; "" at the global level.
	Key      string
	From, To BreakerState
	// Completed and Bad are the window's figures when it opened from
	// closed (for a failed probe: 1 and 1; on closing: the probes, 0).
	Completed, Bad uint64
	// Measure is what tripped it: the ratio for the ratio strategies, the
	// error count for error_count.
	Measure float64
}

// WithBreakerListener calls fn at every circuit breaker state change,
// synchronously on the goroutine whose Entry or Exit made it: fn must be
// quick and must not call the engine. Default: none. Changes are also
// logged at Info through WithLogger's logger.
func WithBreakerListener(fn func(BreakerEvent)) Option {
	return func(cf *config) { cf.onBreaker = fn }
}

// breakerUse is one breaker a call passed: its Exit records the outcome.
type breakerUse struct {
	b   *algo.Breaker
	cr  *compiledRule
	key string
	v   algo.BreakerVerdict
}

// breaker asks cr, a circuit breaker, whether the call with key ("" at
// the global level) may pass. A
// passed breaker goes to the call's record, to be told the outcome at Exit
// (or its probe given back when a later check refuses). A shadow breaker
// that would refuse records nothing either: an enforcing one would not
// have seen the call's outcome.
func (st *entryState) breaker(cr *compiledRule, key string) bool {
	if key == "" && cr.keyed {
		return true
	}
	e := st.eng
	lim, err := cr.limiterFor(key, st.now)
	b, _ := lim.(*algo.Breaker)
	if err != nil || b == nil {
		e.logError("flow: building breaker", err, cr)
		return true
	}
	if st.now-cr.seen.Load() >= seenStep {
		cr.seen.Store(st.now)
	}
	v := b.Check(breakerSpecOf(&cr.rule), st.now)
	if v.Moved {
		e.breakerMoved(cr, key, algo.BreakerMove{From: algo.BreakerOpen, To: algo.BreakerHalfOpen}, st.now)
	}
	if !v.OK {
		return st.deny(cr, ReasonBreakerOpen, key, algo.Decision{Verdict: algo.Refused, Wait: v.RetryAfter})
	}
	c := st.rec()
	c.brk = append(c.brk, breakerUse{b: b, cr: cr, key: key, v: v})
	return true
}

// seenStep is how stale compiledRule.seen may be: Entry stores its time
// there when it moved on by this much.
const seenStep = int64(time.Millisecond)

// exitBreakers records the call's outcome at every breaker it passed, at
// the time it ended. A slow_ratio breaker needs the response time, so the
// clock is read for it. An error breaker needs only which window bucket
// the outcome falls in, and a clock read costs as much as the rest of an
// Exit: on the real clock (when WithRTSampling samples) it takes the latest
// Entry time its rule saw, to the millisecond (compiledRule.seen). So a
// call that outlives the window still counts, as long as calls go on
// entering; when none do, its outcome counts at the last one's time.
func (c *call) exitBreakers(failed bool) {
	e := c.eng
	var now int64
	exact := e.cf.rtMask == 0
	for i := range c.brk {
		u := &c.brk[i]
		at := max(c.start, u.cr.seen.Load())
		if exact || u.cr.rule.Strategy == BreakerSlowRatio {
			if now == 0 {
				now = e.now()
			}
			at = now
		}
		if m, ok := u.b.Record(breakerSpecOf(&u.cr.rule), u.v, at, time.Duration(at-c.start), failed); ok {
			e.breakerMoved(u.cr, u.key, m, at)
		}
		*u = breakerUse{}
	}
	c.brk = c.brk[:0]
}

// breakerMoved counts, logs and reports one transition.
func (e *Engine) breakerMoved(cr *compiledRule, key string, m algo.BreakerMove, now int64) {
	from, to := BreakerState(m.From), BreakerState(m.To)
	cr.transitions[to].Add(1)
	if e.cf.log == nil && e.cf.onBreaker == nil {
		return
	}
	ev := BreakerEvent{Time: e.cf.clk.Now(), Resource: cr.rule.Resource, RuleID: cr.rule.ID, Level: cr.rule.Level,
		Key: key, From: from, To: to, Completed: m.Completed, Bad: m.Bad, Measure: m.Measure}
	if e.cf.log != nil {
		e.cf.log.Info("flow: circuit breaker "+to.String(), slog.String("resource", ev.Resource),
			slog.String("rule", ev.RuleID), slog.String("level", ev.Level.String()), slog.String("key", key),
			slog.String("from", from.String()), slog.Uint64("completed", m.Completed),
			slog.Uint64("bad", m.Bad), slog.String("measure", strconv.FormatFloat(m.Measure, 'g', 4, 64)))
	}
	if e.cf.onBreaker != nil {
		e.cf.onBreaker(ev)
	}
}

// BreakerStats describes one circuit breaker rule.
type BreakerStats struct {
	ID, Resource string
	Level        Level
	Strategy     BreakerStrategy
	// State is the global breaker's state; for a user or ip rule, open
	// when any key's breaker is open, else half-open when any is, else
	// closed. An open breaker whose OpenFor is up reads as half-open: the
	// next call moves it there.
	State BreakerState
	// Completed and Bad are the global breaker's window figures now (bad:
	// errors, or slow calls for slow_ratio), and Measure the ratio or count
	// its strategy compares with Threshold; zero for user and ip rules.
	Completed, Bad uint64
	Measure        float64
	Threshold      float64
	Window         time.Duration
	// OpenKeys and HalfOpenKeys count the keys of a user or ip rule in
	// those states.
	OpenKeys, HalfOpenKeys int
	// Transitions counts the changes into each state since the rule was
	// loaded (all keys together), indexed by BreakerState.
	Transitions [numBreakerStates]uint64
}

// breakerStats reads one breaker rule at now.
func (cr *compiledRule) breakerStats(now int64) BreakerStats {
	r := &cr.rule
	s := BreakerStats{ID: r.ID, Resource: r.Resource, Level: r.Level, Strategy: r.Strategy,
		Threshold: r.Threshold, Window: r.Window}
	for i := range s.Transitions {
		s.Transitions[i] = cr.transitions[i].Load()
	}
	if cr.keys == nil {
		b := cr.global.(*algo.Breaker)
		s.State = BreakerState(b.State(now))
		s.Completed, s.Bad, s.Measure = b.Window(breakerSpecOf(r), now)
		return s
	}
	cr.eachKeyLimiter(func(l limiter) {
		switch BreakerState(l.(*algo.Breaker).State(now)) {
		case BreakerOpen:
			s.OpenKeys++
		case BreakerHalfOpen:
			s.HalfOpenKeys++
		}
	})
	switch {
	case s.OpenKeys > 0:
		s.State = BreakerOpen
	case s.HalfOpenKeys > 0:
		s.State = BreakerHalfOpen
	}
	return s
}
