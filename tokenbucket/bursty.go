package tokenbucket

import (
	"math"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// A bursty limiter's state is one word: e, the instant (nanoseconds since
// the limiter's origin) at which its bucket is empty, as GCRA's theoretical
// arrival time and uber-go/ratelimit's "last" are one instant. Guava keeps
// two numbers, nextFree and storedPermits, but for SmoothBursty they are one
// virtual time:
//
//	e > now   the bucket owes e-now: nothing stored, nextFree = e
//	e <= now  nextFree = now and storedPermits = min(maxPermits, (now-e)/interval)
//
// Guava's bursty limiter stores permits only while it owes nothing (a
// request that empties the store pushes nextFree past now; one served from
// the store leaves nextFree at now), so no state of its is lost. Its resync
// (idle time credited as permits, capped at maxPermits) is e = max(e,
// now-burst), where burst is maxBurstSeconds: a full bucket holds that much
// time whatever the rate.
//
// The word is the same instant at every rate of one burst: Guava's setRate
// rescales the stored permits by the ratio of the maxPermits, maxBurstSeconds
// times the rate, so the time they stand for, permits times interval, is
// unchanged, and a debt is time already. So SetRate swaps the rate (an
// immutable rateConfig behind an atomic pointer, by compare-and-swap so
// that concurrent SetRates are ordered) and leaves the word alone, but for
// leaving a +Inf rate (see setRateBursty). A call loads the word, then the
// rate, computes, and swaps the word only if it still holds what it
// loaded. A call racing a SetRate is therefore computed wholly at the old
// rate or wholly at the new one, whichever its load found, and committed
// to the word it was computed from: each grant is a Guava step, at a rate
// current during the call, on the state at its commit. No lock, no version
// number, and a SetRate never makes a call retry.
//
// Refund is the same loop: computed on the word it loaded, committed only
// to it. Right after its reservation it subtracts what the grant added,
// with the same truncated spans: exactly for a grant wholly from the store
// or wholly fresh; for one partly from each, within the microsecond
// Guava's cast took off its fresh wait. Later, or after other calls, it
// still never moves the debt before now nor fills the store past
// maxPermits.
//
// Times are Guava's: now is truncated to whole microseconds, the wait for
// fresh permits is (long)(fresh*stableIntervalMicros) microseconds, so
// Guava's waits come out to the microsecond. Stored permits spent move e
// by their time in nanoseconds, truncated (in the caller's favour, as
// Guava's casts are): one nanosecond per grant at most, a thousandth of the
// truncation Guava itself makes on every fresh grant. The word saturates
// at never (292 years) where Guava's nextFree saturates at Long.MAX_VALUE
// microseconds: both owe longer than any timeout.
const never = math.MaxInt64

// unbounded is the timeout of a reservation that is made whatever it
// waits (Acquire without a deadline, Reserve).
const unbounded = -1

// maxBurstNs caps the burst so that now-burst never overflows: 146 years.
const maxBurstNs = 1 << 62

func burstNanos(s float64) int64 {
	if ns := s * 1e9; ns < maxBurstNs {
		return int64(ns)
	}
	return maxBurstNs
}

// setBursty fills c's rate fields for rate (Guava's setRate and
// SmoothBursty's doSetRate, but for the stored permits, which the word
// keeps as time).
func (c *rateConfig) setBursty(rate float64) {
	c.stable = 1e6 / rate
	c.interval = 1e9 / rate
	c.maxP = 0 // a zero burst stays zero even at +Inf (0*Inf would be NaN)
	if c.burstSeconds > 0 {
		c.maxP = c.burstSeconds * rate
	}
}

// startWord is the word of a limiter that starts at t with c's initial
// stored permits.
func (c *rateConfig) startWord(t int64) int64 {
	switch s := c.initialStored(); {
	case s == 0:
		return t
	case s >= c.maxP: // full: exactly maxPermits stored
		return t - c.burstNs
	default:
		return t - min(c.span(s), c.burstNs)
	}
}

// span is the time p permits stand for, in nanoseconds, truncated.
func (c *rateConfig) span(p float64) int64 {
	if d := p * c.interval; d < maxBurstNs {
		return int64(d)
	}
	return maxBurstNs
}

// freshCost is Guava's wait for f fresh permits, (long)(f*stableIntervalMicros)
// microseconds, here in nanoseconds; never from 292 years on.
func (c *rateConfig) freshCost(f float64) int64 {
	if m := javaLong(f * c.stable); m < never/1000 {
		return m * 1000
	}
	return never
}

// wholeMicros truncates ns to whole microseconds, as Guava's waits are,
// saturating at never.
func wholeMicros(ns float64) int64 {
	if m := javaLong(ns) / 1000; m < never/1000 {
		return m * 1000
	}
	return never
}

// storedAt is the stored permits of word e at t.
func (c *rateConfig) storedAt(e, t int64) float64 {
	switch {
	case c.interval == 0: // +Inf: everything is free
		return c.maxP
	case e >= t: // owes, or just empty
		return 0
	case e <= t-c.burstNs: // full: exactly maxPermits, as Guava's min
		return c.maxP
	}
	return c.partial(t - e)
}

// partial is the permits idle time d (0 < d < burstNs) stores, Guava's
// min(maxPermits, d/interval): the quotient can reach maxPermits just
// short of a full bucket's span. Both are finite and positive here (a
// +Inf rate has interval 0 and is decided before), so a compare is min.
func (c *rateConfig) partial(d int64) float64 {
	if p := float64(d) / c.interval; p < c.maxP {
		return p
	}
	return c.maxP
}

// grant is Guava's reserveEarliestAvailable on the word at t: the new word,
// and the instant the call may go at. What the new word stores at t is
// storedAt(next, t), left for the caller to compute once the word is
// written, so that nothing runs between reading the word and writing it
// but what the decision needs.
func (c *rateConfig) grant(e, t int64, permits int) (next, at int64) {
	n := float64(permits)
	switch {
	case c.interval == 0:
		// +Inf: permits cost nothing; a debt from a finite rate is still owed.
		return e, max(e, t)
	case e >= t:
		// Nothing stored: all fresh. The call goes at e; the next one pays.
		return saturatedAdd(e, c.freshCost(n)), e
	}
	base := max(e, t-c.burstNs) // resync: idle time credited up to maxPermits
	if n <= c.storedAt(base, t) {
		// All from the store: free, and nextFree stays at now, so e stays
		// at or before now (even were the float to round up).
		if d := c.span(n); d < t-base {
			return base + d, t // < t: what is left is stored
		}
		return t, t
	}
	// The store emptied, the rest fresh from now on: Guava's
	// (long)((n-stored)*stable), computed on the time the permits stand
	// for, exact in nanoseconds where the float of stored is not.
	return saturatedAdd(t, wholeMicros(n*c.interval-float64(t-base))), t
}

// refund gives permits back to the word at t: fresh ones first, never
// before now (a reservation takes fresh permits only once the stored ones
// are gone), then stored ones, never above maxPermits.
func (c *rateConfig) refund(e, t int64, permits int) int64 {
	if c.interval == 0 { // +Inf: nothing cost anything
		return e
	}
	k := float64(permits)
	if e > t {
		if d := c.freshCost(k); d < e-t {
			return e - d
		}
		k -= float64(e-t) / c.interval
		e = t
	}
	full := t - c.burstNs
	if e <= full {
		return e // already full
	}
	if d := c.span(k); d < e-full {
		return e - d
	}
	return full
}

// reserve is Guava's tryAcquire decision and reservation at now, with a
// timeout >= 0, counted in whole microseconds as Guava's is, or unbounded
// (reserve whatever the wait). Errors only for invalid permits (<= 0). A
// warming-up limiter decides under its lock (warming.go); a bursty one on
// its word: Guava's canAcquire, then its reserveEarliestAvailable (grant).
// The timeout is cut to microseconds only where it is compared: a call
// that owes nothing never needs it.
func (l *Limiter) reserve(now int64, permits int, timeout time.Duration) (Reservation, error) {
	switch {
	case permits <= 0:
		return Reservation{}, errPermits(permits)
	case l.warm != nil:
		return l.warm.tryReserve(l, l.micros(now), permits, wholeMicrosOf(timeout)), nil
	}
	t := l.micros(now) * 1000
	for {
		e := l.word.Load()
		if e > t && timeout != unbounded && (e == never || e-wholeMicrosOf(timeout)*1000 > t) {
			// Guava's canAcquire is false: refused on one load, with no
			// write. The word held e at a moment after the caller's now.
			// (A Duration's whole micros times 1000 does not overflow.)
			return Reservation{Wait: waitFor(e, t)}, nil
		}
		c := l.rate.Load() // after the word: see above
		next, at := c.grant(e, t, permits)
		if next == e || l.word.CompareAndSwap(e, next) {
			// Granted: nothing to write (a +Inf rate, or permits worth
			// less than a nanosecond), or the word was still e.
			stored := c.storedAt(next, t)
			return Reservation{OK: true, Wait: waitFor(at, t), Stored: stored,
				Refill: refill(c.maxP-stored, c.stable)}, nil
		}
		// Another call moved the word since the load: decide again from
		// its new value (that call made progress, so no back-off).
	}
}

// refundBursty is Refund on a bursty limiter.
func (l *Limiter) refundBursty(m int64, permits int) {
	t := m * 1000
	for {
		e := l.word.Load()
		c := l.rate.Load()
		next := c.refund(e, t, permits)
		if next == e || l.word.CompareAndSwap(e, next) {
			return // nothing to give back, or given back on the word it was computed from
		}
		// Moved by another call since the load: compute again.
	}
}

// setRateBursty is SetRate on a bursty limiter: the rate swapped by one
// compare-and-swap of the pointer, so SetRates are ordered and none is lost.
func (l *Limiter) setRateBursty(rate float64) {
	for {
		old := l.rate.Load()
		cfg := *old
		cfg.setBursty(rate)
		if old.interval == 0 && cfg.interval != 0 {
			// Leaving +Inf: Guava's stored permits were infinite, and its
			// rescale fills the bucket. Filled before the new rate is
			// published: a call that loads the new rate loaded the word
			// before the fill only if its compare-and-swap then fails.
			l.fill(l.micros(clock.Nanotime(old.clk))*1000, old.burstNs)
		}
		if l.rate.CompareAndSwap(old, &cfg) {
			return
		}
		// Another SetRate came first: apply this one after it.
	}
}

// fill makes the bucket full at t, unless it owes: then the debt stands
// and nothing is stored until it is paid (Guava would store maxPermits on
// top of the debt, a state one word cannot hold; this grants less).
func (l *Limiter) fill(t, burst int64) {
	for {
		e := l.word.Load()
		if e > t || e <= t-burst {
			return // owes, or already full
		}
		if l.word.CompareAndSwap(e, t-burst) {
			return
		}
		// A call moved the word: look again.
	}
}

// wholeMicrosOf is a timeout in whole microseconds; unbounded stays
// unbounded.
func wholeMicrosOf(d time.Duration) int64 {
	if d == unbounded {
		return unbounded
	}
	return int64(d / time.Microsecond)
}

// waitFor is the wait until at, from t: saturated when at is never.
func waitFor(at, t int64) time.Duration {
	if at == never {
		return math.MaxInt64
	}
	return time.Duration(max(at-t, 0))
}
