package flow

import (
	"fmt"
	"sync/atomic"
	"time"
)

// BreakerStrategy is what a circuit breaker measures over its window.
type BreakerStrategy uint8

// The strategies. The zero value is "none": only breakers have one.
const (
	// BreakerErrorRatio opens when errors / completed calls > Threshold.
	BreakerErrorRatio BreakerStrategy = iota + 1
	// BreakerErrorCount opens when errors >= Threshold.
	BreakerErrorCount
	// BreakerSlowRatio opens when calls slower than SlowCall / completed
	// calls > Threshold.
	BreakerSlowRatio
	numStrategies
)

var strategyNames = [numStrategies]string{"", "error_ratio", "error_count", "slow_ratio"}

// String returns the strategy's JSON name ("" for none).
func (s BreakerStrategy) String() string {
	if s < numStrategies {
		return strategyNames[s]
	}
	return fmt.Sprintf("BreakerStrategy(%d)", uint8(s))
}

// Strategies lists the breaker strategies, in JSON order.
func Strategies() []BreakerStrategy {
	return []BreakerStrategy{BreakerErrorRatio, BreakerErrorCount, BreakerSlowRatio}
}

// ParseStrategy parses a strategy's JSON name, e.g. "error_ratio".
func ParseStrategy(s string) (BreakerStrategy, error) {
	for _, x := range Strategies() {
		if strategyNames[x] == s {
			return x, nil
		}
	}
	return 0, fmt.Errorf("unknown strategy %q (want error_ratio, error_count or slow_ratio)", s)
}

// BreakerState is a circuit breaker's state. Its numbers are those of the
// flowgate_breaker_state metric.
type BreakerState uint8

// The states: closed lets calls through and counts their outcomes; open
// refuses every call for OpenFor; half-open lets Probes calls through and
// closes when all succeed, or opens again when one fails.
const (
	BreakerClosed    BreakerState = 0
	BreakerOpen      BreakerState = 1
	BreakerHalfOpen  BreakerState = 2
	numBreakerStates BreakerState = 3
)

var breakerStateNames = [numBreakerStates]string{"closed", "open", "half_open"}

// String returns "closed", "open" or "half_open".
func (s BreakerState) String() string {
	if s < numBreakerStates {
		return breakerStateNames[s]
	}
	return fmt.Sprintf("BreakerState(%d)", uint8(s))
}

// breaker is one circuit breaker: the rule's only one at the global level,
// or one per user or IP in the rule's key table.
//
// The state is one word, changed by compare-and-swap only, so the closed
// path is a load and the half-open probe count is exact under any number of
// racing callers:
//
//	bits 0-1   state (BreakerState)
//	bits 2-11  probes taken in this half-open spell
//	bits 12-21 probes that succeeded in it
//	bits 22-63 generation: +1 at every transition, so an outcome of a call
//	           admitted in an earlier spell never counts in a later one
//
// When it opens, the winner of the opening CAS (and only it) then publishes
// the moment it may go half-open in until, tagged with the new generation:
// a caller that sees open before the tag matches treats it as just opened.
type breaker struct {
	word  atomic.Uint64
	until atomic.Uint64 // generation (low 16 bits) << 48 | µs since base
	base  int64         // the engine clock reading when it was made, floored to the µs
	win   breakerWindow
}

const (
	bwStateMask = 3
	bwTakenOne  = 1 << 2
	bwOKShift   = 12
	bwOKOne     = 1 << bwOKShift
	bwProbeMask = 1<<10 - 1
	bwGenShift  = 22
	// MaxProbes bounds Rule.Probes (the state word keeps 10 bits for them).
	MaxProbes = 1000
)

func stateOf(w uint64) BreakerState { return BreakerState(w & bwStateMask) }
func genOf(w uint64) uint64         { return w >> bwGenShift }
func takenOf(w uint64) int          { return int(w >> 2 & bwProbeMask) }
func okOf(w uint64) int             { return int(w >> bwOKShift & bwProbeMask) }

// next is the word of a new spell in state s, one generation on from w.
func next(w uint64, s BreakerState) uint64 { return (genOf(w)+1)<<bwGenShift | uint64(s) }

// newBreaker floors base to a whole µs of the engine clock, so that until,
// rounded up to the µs from base, is the same instant whenever the breaker
// was made: open+OpenFor itself when that is on a whole µs (a base with a
// sub-µs part put the half-open moment up to 1µs late, after Sentinel's).
func newBreaker(r *Rule, now int64) *breaker {
	b := &breaker{base: now - floorMod(now, int64(time.Microsecond))}
	b.win.init(r.Window)
	return b
}

// breakerVerdict is what check decides for one call: a small value.
type breakerVerdict struct {
	ok         bool
	probe      bool          // the call is a half-open probe of spell gen
	gen        uint64        // the generation the call was admitted in
	moved      bool          // this call moved the breaker open -> half-open
	retryAfter time.Duration // !ok: time until half-open; 0 while probes run
}

// check admits or refuses one call at now.
func (b *breaker) check(r *Rule, now int64) breakerVerdict {
	for {
		w := b.word.Load()
		switch stateOf(w) {
		case BreakerClosed:
			return breakerVerdict{ok: true, gen: genOf(w)}
		case BreakerOpen:
			until, published := b.openUntil(w)
			if !published { // opened a moment ago: its until is on the way
				return breakerVerdict{retryAfter: r.OpenFor}
			}
			if now < until {
				return breakerVerdict{retryAfter: time.Duration(until - now)}
			}
			// Time is up: whoever wins this CAS starts the half-open spell
			// and is its first probe; a loser reads the new word again.
			n := next(w, BreakerHalfOpen) + bwTakenOne
			if b.word.CompareAndSwap(w, n) {
				return breakerVerdict{ok: true, probe: true, gen: genOf(n), moved: true}
			}
		case BreakerHalfOpen:
			if takenOf(w) >= r.Probes {
				return breakerVerdict{} // every probe is out: wait for them
			}
			// One more probe, or retry when another caller changed the word.
			if b.word.CompareAndSwap(w, w+bwTakenOne) {
				return breakerVerdict{ok: true, probe: true, gen: genOf(w)}
			}
		default:
			return breakerVerdict{ok: true, gen: genOf(w)} // unreachable: 3 is no state
		}
	}
}

// cancel gives back the probe of a call that a flow rule refused after the
// breaker admitted it: that refusal is not the dependency's outcome.
func (b *breaker) cancel(v breakerVerdict) {
	if !v.probe {
		return
	}
	for {
		w := b.word.Load()
		// Only in the spell that gave the probe; a later spell has its own.
		if stateOf(w) != BreakerHalfOpen || genOf(w) != v.gen || takenOf(w) == 0 {
			return
		}
		if b.word.CompareAndSwap(w, w-bwTakenOne) {
			return
		}
	}
}

// openUntil reads the moment an open word may go half-open, and whether
// it was published yet for w's generation.
func (b *breaker) openUntil(w uint64) (int64, bool) {
	u := b.until.Load()
	if u>>48 != genOf(w)&0xffff {
		return 0, false
	}
	return b.base + int64(u&(1<<48-1))*int64(time.Microsecond), true
}

// open moves w's spell to open at now (by CAS; false when another caller
// changed the word first), then publishes until, rounded up to the µs.
func (b *breaker) open(r *Rule, w uint64, now int64) bool {
	n := next(w, BreakerOpen)
	if !b.word.CompareAndSwap(w, n) {
		return false
	}
	us := (now - b.base + int64(r.OpenFor) + int64(time.Microsecond) - 1) / int64(time.Microsecond)
	us = min(max(us, 0), 1<<48-1)
	b.until.Store((genOf(n)&0xffff)<<48 | uint64(us))
	return true
}

// breakerMove is a transition made by record, for listeners and metrics.
type breakerMove struct {
	from, to       BreakerState
	completed, bad uint64  // the window's figures when it tripped
	measure        float64 // the ratio or count that tripped it
}

// record counts the outcome of a call admitted with v, which ended at now
// after rt and failed or not, and makes the transition it calls for.
func (b *breaker) record(r *Rule, v breakerVerdict, now int64, rt time.Duration, failed bool) (breakerMove, bool) {
	bad := failed
	if r.Strategy == BreakerSlowRatio {
		bad = rt > r.SlowCall
	}
	if v.probe {
		return b.probeDone(r, v, now, bad)
	}
	// A call admitted while closed counts in the window whatever the state
	// now: the window is cleared when the breaker closes again.
	inBucket := b.win.add(now, bad)
	if !bad && inBucket > uint64(r.MinRequests) {
		// A success lowers every measure; it can open the breaker only by
		// bringing the window up to MinRequests, or when the measure rose
		// as older buckets slid out, which happens only as this bucket
		// began (its first outcomes are all checked). This bucket alone
		// is past MinRequests, so neither: the window need not be summed,
		// the common case of a healthy dependency under load (and the sum
		// reads lines other cores write).
		return breakerMove{}, false
	}
	w := b.word.Load()
	if stateOf(w) != BreakerClosed || genOf(w) != v.gen {
		return breakerMove{}, false // admitted in an earlier closed spell: counted only
	}
	completed, nbad := b.win.sum(now)
	measure, trip := trips(r, completed, nbad)
	if trip && b.open(r, w, now) {
		return breakerMove{from: BreakerClosed, to: BreakerOpen, completed: completed, bad: nbad, measure: measure}, true
	}
	return breakerMove{}, false
}

// trips reports the measure of r's strategy and whether it opens the
// breaker: only with completed >= MinRequests; ratios when > Threshold,
// error_count when errors >= Threshold.
func trips(r *Rule, completed, bad uint64) (float64, bool) {
	if r.Strategy == BreakerErrorCount {
		return float64(bad), completed >= uint64(r.MinRequests) && float64(bad) >= r.Threshold
	}
	if completed == 0 {
		return 0, false
	}
	ratio := float64(bad) / float64(completed)
	return ratio, completed >= uint64(r.MinRequests) && ratio > r.Threshold
}

// probeDone settles one half-open probe: a failure opens the breaker again,
// the last of Probes successes closes it with a fresh window.
func (b *breaker) probeDone(r *Rule, v breakerVerdict, now int64, bad bool) (breakerMove, bool) {
	for {
		w := b.word.Load()
		if stateOf(w) != BreakerHalfOpen || genOf(w) != v.gen {
			return breakerMove{}, false // the spell already ended
		}
		if bad {
			if b.open(r, w, now) {
				return breakerMove{from: BreakerHalfOpen, to: BreakerOpen, completed: 1, bad: 1, measure: 1}, true
			}
			continue
		}
		if okOf(w)+1 < r.Probes {
			if b.word.CompareAndSwap(w, w+bwOKOne) {
				return breakerMove{}, false
			}
			continue
		}
		if b.word.CompareAndSwap(w, next(w, BreakerClosed)) {
			// Fresh statistics. A call admitted in the spell before the
			// opening may still add to the window after this: it counts,
			// as any outcome that ends while closed.
			b.win.reset()
			return breakerMove{from: BreakerHalfOpen, to: BreakerClosed, completed: uint64(r.Probes)}, true
		}
	}
}

// state reads the breaker's state at now: an open breaker whose time is up
// reads as half-open (it moves at the next call).
func (b *breaker) state(now int64) BreakerState {
	w := b.word.Load()
	if stateOf(w) == BreakerOpen {
		if until, ok := b.openUntil(w); ok && now >= until {
			return BreakerHalfOpen
		}
	}
	return stateOf(w)
}

// A breaker sits in a rule's key table beside limiters; as a limiter it
// admits everything and holds nothing (the engine calls check and record).
func (b *breaker) tryAcquire(int64, int, time.Duration) decision { return decision{ok: true} }
func (b *breaker) refund(int64, int)                             {}
func (b *breaker) release(int)                                   {}
func (b *breaker) setLimit(int64, float64)                       {}
func (b *breaker) remaining(int64) float64                       { return 0 }
