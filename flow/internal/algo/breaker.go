package algo

import (
	"sync/atomic"
	"time"
)

// BreakerStrategy is what a circuit breaker measures over its window. The
// engine's public enum has the same numbers.
type BreakerStrategy uint8

// The strategies; the zero value is none.
const (
	BreakerErrorRatio BreakerStrategy = iota + 1 // errors / completed calls > Threshold
	BreakerErrorCount                            // errors >= Threshold
	BreakerSlowRatio                             // calls slower than SlowCall / completed calls > Threshold
)

// BreakerState is a circuit breaker's state. The engine's public enum has
// the same numbers.
type BreakerState uint8

// The states: closed lets calls through and counts their outcomes; open
// refuses every call for OpenFor; half-open lets Probes calls through and
// closes when all succeed, or opens again when one fails.
const (
	BreakerClosed   BreakerState = 0
	BreakerOpen     BreakerState = 1
	BreakerHalfOpen BreakerState = 2
)

// BreakerSpec is what a circuit breaker reads of its rule.
type BreakerSpec struct {
	Strategy    BreakerStrategy
	Threshold   float64       // the ratio (exclusive) or error count (inclusive) that opens it
	MinRequests int           // completed calls in the window before it may open
	SlowCall    time.Duration // BreakerSlowRatio: a call slower than this is bad
	OpenFor     time.Duration // how long it stays open before probing
	Probes      int           // calls let through half-open, 1..MaxProbes
}

// Breaker is one circuit breaker: the rule's only one at the global level,
// or one per key in the rule's key table. The engine asks Check before a
// call, Record after it (or Cancel when a later check refused the call),
// handing it the rule's BreakerSpec each time: the settings are the rule's,
// so a tracked key's breaker does not keep a copy.
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
type Breaker struct {
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
	// MaxProbes bounds BreakerSpec.Probes (the state word keeps 10 bits
	// for them).
	MaxProbes = 1000
)

func stateOf(w uint64) BreakerState { return BreakerState(w & bwStateMask) }
func genOf(w uint64) uint64         { return w >> bwGenShift }
func takenOf(w uint64) int          { return int(w >> 2 & bwProbeMask) }
func okOf(w uint64) int             { return int(w >> bwOKShift & bwProbeMask) }

// next is the word of a new spell in state s, one generation on from w.
func next(w uint64, s BreakerState) uint64 { return (genOf(w)+1)<<bwGenShift | uint64(s) }

// newBreaker (origin: clock.Origin's Unix ns) floors base to a whole µs of the engine clock, so that until,
// rounded up to the µs from base, is the same instant whenever the breaker
// was made: open+OpenFor itself when that is on a whole µs (a base with a
// sub-µs part put the half-open moment up to 1µs late, after Sentinel's).
func newBreaker(window time.Duration, buckets int, now, origin int64) *Breaker {
	b := &Breaker{base: now - floorMod(now, int64(time.Microsecond))}
	b.win.init(window, buckets, origin)
	return b
}

// BreakerVerdict is what Check decides for one call: a small value the
// engine keeps until the call's outcome is recorded.
type BreakerVerdict struct {
	OK         bool
	Moved      bool          // this call moved the breaker open -> half-open
	RetryAfter time.Duration // !OK: time until half-open; 0 while probes run
	probe      bool          // the call is a half-open probe of spell gen
	gen        uint64        // the generation the call was admitted in
}

// Check admits or refuses one call at now under c.
func (b *Breaker) Check(c *BreakerSpec, now int64) BreakerVerdict {
	for {
		w := b.word.Load()
		switch stateOf(w) {
		case BreakerClosed:
			return BreakerVerdict{OK: true, gen: genOf(w)}
		case BreakerOpen:
			until, published := b.openUntil(w)
			if !published { // opened a moment ago: its until is on the way
				return BreakerVerdict{RetryAfter: c.OpenFor}
			}
			if now < until {
				return BreakerVerdict{RetryAfter: time.Duration(until - now)}
			}
			// Time is up: whoever wins this CAS starts the half-open spell
			// and is its first probe; a loser reads the new word again.
			n := next(w, BreakerHalfOpen) + bwTakenOne
			if b.word.CompareAndSwap(w, n) {
				return BreakerVerdict{OK: true, probe: true, gen: genOf(n), Moved: true}
			}
		case BreakerHalfOpen:
			if takenOf(w) >= c.Probes {
				return BreakerVerdict{} // every probe is out: wait for them
			}
			// One more probe, or retry when another caller changed the word.
			if b.word.CompareAndSwap(w, w+bwTakenOne) {
				return BreakerVerdict{OK: true, probe: true, gen: genOf(w)}
			}
		default:
			return BreakerVerdict{OK: true, gen: genOf(w)} // unreachable: 3 is no state
		}
	}
}

// Cancel gives back the probe of a call that a flow rule refused after the
// breaker admitted it: that refusal is not the dependency's outcome.
func (b *Breaker) Cancel(v BreakerVerdict) {
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
func (b *Breaker) openUntil(w uint64) (int64, bool) {
	u := b.until.Load()
	if u>>48 != genOf(w)&0xffff {
		return 0, false
	}
	return b.base + int64(u&(1<<48-1))*int64(time.Microsecond), true
}

// open moves w's spell to open at now (by CAS; false when another caller
// changed the word first), then publishes until, rounded up to the µs.
func (b *Breaker) open(c *BreakerSpec, w uint64, now int64) bool {
	n := next(w, BreakerOpen)
	if !b.word.CompareAndSwap(w, n) {
		return false
	}
	us := (now - b.base + int64(c.OpenFor) + int64(time.Microsecond) - 1) / int64(time.Microsecond)
	us = min(max(us, 0), 1<<48-1)
	b.until.Store((genOf(n)&0xffff)<<48 | uint64(us))
	return true
}

// BreakerMove is a transition made by Record, for listeners and metrics.
type BreakerMove struct {
	From, To       BreakerState
	Completed, Bad uint64  // the window's figures when it tripped
	Measure        float64 // the ratio or count that tripped it
}

// Record counts the outcome of a call admitted with v, which ended at now
// after rt and failed or not, and makes the transition c calls for.
func (b *Breaker) Record(c *BreakerSpec, v BreakerVerdict, now int64, rt time.Duration, failed bool) (BreakerMove, bool) {
	bad := failed
	if c.Strategy == BreakerSlowRatio {
		bad = rt > c.SlowCall
	}
	if v.probe {
		return b.probeDone(c, v, now, bad)
	}
	// A call admitted while closed counts in the window whatever the state
	// now: the window is cleared when the breaker closes again.
	inBucket := b.win.add(now, bad)
	if !bad && inBucket > uint64(c.MinRequests) {
		// A success lowers every measure; it can open the breaker only by
		// bringing the window up to MinRequests, or when the measure rose
		// as older buckets slid out, which happens only as this bucket
		// began (its first outcomes are all checked). This bucket alone
		// is past MinRequests, so neither: the window need not be summed,
		// the common case of a healthy dependency under load (and the sum
		// reads lines other cores write).
		return BreakerMove{}, false
	}
	w := b.word.Load()
	if stateOf(w) != BreakerClosed || genOf(w) != v.gen {
		return BreakerMove{}, false // admitted in an earlier closed spell: counted only
	}
	completed, nbad := b.win.sum(now)
	measure, trip := c.trips(completed, nbad)
	if trip && b.open(c, w, now) {
		return BreakerMove{From: BreakerClosed, To: BreakerOpen, Completed: completed, Bad: nbad, Measure: measure}, true
	}
	return BreakerMove{}, false
}

// trips reports the measure of c's strategy and whether it opens the
// breaker: only with completed >= MinRequests; ratios when > Threshold,
// error_count when errors >= Threshold.
func (c *BreakerSpec) trips(completed, bad uint64) (float64, bool) {
	if c.Strategy == BreakerErrorCount {
		return float64(bad), completed >= uint64(c.MinRequests) && float64(bad) >= c.Threshold
	}
	if completed == 0 {
		return 0, false
	}
	ratio := float64(bad) / float64(completed)
	return ratio, completed >= uint64(c.MinRequests) && ratio > c.Threshold
}

// Window reads the window ending at now: the completed calls, the bad ones
// (errors, or slow calls for BreakerSlowRatio), and the measure c's
// strategy compares with Threshold.
func (b *Breaker) Window(c *BreakerSpec, now int64) (completed, bad uint64, measure float64) {
	completed, bad = b.win.sum(now)
	measure, _ = c.trips(completed, bad)
	return completed, bad, measure
}

// probeDone settles one half-open probe: a failure opens the breaker again,
// the last of Probes successes closes it with a fresh window.
func (b *Breaker) probeDone(c *BreakerSpec, v BreakerVerdict, now int64, bad bool) (BreakerMove, bool) {
	for {
		w := b.word.Load()
		if stateOf(w) != BreakerHalfOpen || genOf(w) != v.gen {
			return BreakerMove{}, false // the spell already ended
		}
		if bad {
			if b.open(c, w, now) {
				return BreakerMove{From: BreakerHalfOpen, To: BreakerOpen, Completed: 1, Bad: 1, Measure: 1}, true
			}
			continue
		}
		if okOf(w)+1 < c.Probes {
			if b.word.CompareAndSwap(w, w+bwOKOne) {
				return BreakerMove{}, false
			}
			continue
		}
		if b.word.CompareAndSwap(w, next(w, BreakerClosed)) {
			// Fresh statistics. A call admitted in the spell before the
			// opening may still add to the window after this: it counts,
			// as any outcome that ends while closed.
			b.win.reset()
			return BreakerMove{From: BreakerHalfOpen, To: BreakerClosed, Completed: uint64(c.Probes)}, true
		}
	}
}

// State reads the breaker's state at now: an open breaker whose time is up
// reads as half-open (it moves at the next call).
func (b *Breaker) State(now int64) BreakerState {
	w := b.word.Load()
	if stateOf(w) == BreakerOpen {
		if until, ok := b.openUntil(w); ok && now >= until {
			return BreakerHalfOpen
		}
	}
	return stateOf(w)
}

var _ Limiter = (*Breaker)(nil)

// A Breaker sits in a rule's key table beside limiters; as a Limiter it
// admits everything and holds nothing (the engine calls Check and Record).
func (b *Breaker) TryAcquire(int64, int, time.Duration) Decision { return Decision{Verdict: Granted} }
func (b *Breaker) Refund(int64, int)                             {}
func (b *Breaker) Release(int)                                   {}
func (b *Breaker) SetLimit(int64, float64)                       {}
func (b *Breaker) Remaining(int64) float64                       { return 0 }
