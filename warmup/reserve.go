package warmup

import (
	"fmt"
	"math"
	"time"

	"github.com/flowgate/flowgate/internal/hotpath"
)

// Reservation is the outcome of TryReserveAt: a small value, never allocated.
type Reservation struct {
	OK   bool          // true: permits were reserved
	Wait time.Duration // OK: how long the caller must wait before going ahead (0 = at once);
	// !OK: how long until this request would be granted with timeout 0
	// Stored is, when OK, the permits left stored just after this reservation
	// (what StoredPermitsAt(now) would then report), known from the same
	// compare-and-swap so no second read is needed; 0 when !OK.
	Stored float64
	// Refill is, when OK, how long the limiter takes to store permits back
	// up to MaxPermits from Stored once nothing more is reserved and any
	// Wait owed has passed: at one permit per stable interval for a bursty
	// limiter, per warmupPeriod/MaxPermits for a warming-up one. 0 when !OK
	// or already full. Known with the reservation, like Stored, so callers
	// need not touch the limiter again.
	Refill time.Duration
}

// TryReserveAt reserves permits iff the earliest available moment is within maxWait of now
// (maxWait < 0 counts as 0), exactly as Guava's tryAcquire decides, without sleeping.
// Errors only for invalid permits (<= 0). Zero allocations.
//
// now is clock.Nanotime of the clock the limiter was built with.
//
// A stale now: callers read the clock before they reach the limiter, so under
// concurrency a caller can arrive with a now older than one another caller
// already committed. A bursty limiter that holds stored permits owes nothing
// and its nextFree is exactly the latest moment committed (only a request
// that empties the store can push nextFree past its own now), so there a now
// older than nextFree is taken as nextFree: the caller is served as if it had
// read the clock when it reached the limiter, which is what Guava's lock
// guarantees. A warming-up limiter cannot tell a stale now from a debt (its
// stored permits cost time), so there a stale now may wait or be refused for
// the microseconds it is behind.
func (l *Limiter) TryReserveAt(now int64, permits int, maxWait time.Duration) (Reservation, error) {
	return l.tryReserveAt(now, permits, maxWait, false)
}

// TryReserveAtShared is TryReserveAt for a limiter that callers on several
// cores reserve on at once: it asks for the cache line of the state
// exclusive before reading it, so the line moves between cores once per
// call instead of twice (once to read, once more for the CAS). That costs
// a little where the line is not contended (a limiter per user, say).
func (l *Limiter) TryReserveAtShared(now int64, permits int, maxWait time.Duration) (Reservation, error) {
	return l.tryReserveAt(now, permits, maxWait, true)
}

func (l *Limiter) tryReserveAt(now int64, permits int, maxWait time.Duration, shared bool) (Reservation, error) {
	if permits <= 0 {
		return Reservation{}, errPermits(permits)
	}
	timeout := max(int64(maxWait/time.Microsecond), 0)
	// Shared: nothing of l is read before LoadForWrite, nor after the CAS:
	// another core reserving on l wants its cache line, and every touch
	// outside that window moves the line once more (see hotpath.LoadForWrite).
	for spins := 0; ; spins++ {
		var w0, w1 uint64
		if shared {
			// The line asked for exclusive (see hotpath.LoadForWrite);
			// a torn pair fails the CAS.
			w0, w1 = hotpath.LoadForWrite(l.pair())
		} else {
			w0, w1 = l.load0(), l.load1()
		}
		m := l.micros(now)
		// Guava's canAcquire: nextFree - timeout <= now (both >= 0: no
		// overflow). A refusal needs only these loads, and writes nothing:
		// nextFree held this value at a moment later than the caller's now.
		eff := m // the now this call is served at
		if next := int64(w0 & maxNext); next > m {
			if s := math.Float64frombits(w1); l.warmup < 0 && !(s <= 0) {
				// Bursty with permits stored (> 0, or NaN at +Inf): a
				// stale now, see above. A torn read fails the CAS below.
				eff = next
			} else if next-timeout > m {
				return Reservation{Wait: microsToDuration(next - m)}, nil
			}
		}
		c := l.rate.Load()
		if w0>>verShift != c.ver {
			backoff(spins) // a SetRate is between its CAS and its store of the rate
			continue
		}
		st := decode(w0, w1, c)
		at := l.reserveEarliestAvailable(&st, permits, eff)
		cool := l.coolDown(&st) // read now: l is not read after the CAS
		// commit, one call less between the loads and the CAS.
		if l.cas(w0, w1, encodeNext(st.next, w0>>verShift), math.Float64bits(st.stored)) {
			// Only locals from here: the shorter the time between LoadForWrite
			// and the CAS, the less often another core takes the line
			// in between.
			stored := storedOrMax(&st)
			return Reservation{OK: true, Wait: microsToDuration(max(at-eff, 0)), Stored: stored,
				Refill: refill(st.maxP-stored, cool)}, nil
		}
		lostRace(spins)
	}
}

// refill is Reservation.Refill: missing permits at cool micros each.
func refill(missing, cool float64) time.Duration {
	if !(missing > 0) {
		return 0
	}
	return time.Duration(missing * cool * 1e3)
}

// storedOrMax is st's stored permits, or maxPermits when they are NaN (only
// after switching to +Inf, where everything is free).
func storedOrMax(st *state) float64 {
	if math.IsNaN(st.stored) {
		return st.maxP
	}
	return st.stored
}

// Refund gives back permits reserved by a TryReserveAt whose call did not go ahead (a later
// level refused): it undoes that reservation's cost as far as is still possible (moves the
// next-free moment back by the fresh part, never before now; returns the stored part, never
// above maxPermits). Safe under concurrency; never creates more than maxPermits.
//
// With no other reservation in between, Refund leaves the limiter as it would
// be had the reservation never been made (exactly, right after it; for a
// bursty limiter, later too). Otherwise it is a best effort: the split of a
// reservation between stored and fresh permits is not kept.
func (l *Limiter) Refund(now int64, permits int) {
	if permits <= 0 {
		return
	}
	m := l.micros(now)
	for spins := 0; ; spins++ {
		w0, w1, st := l.snapshot()
		l.refund(&st, m, float64(permits))
		if l.commit(w0, w1, &st) {
			return
		}
		lostRace(spins)
	}
}

func (l *Limiter) refund(st *state, m int64, left float64) {
	l.resync(st, m)
	// A reservation takes fresh permits only once the stored ones are gone, so
	// fresh permits are undone first, and only while nothing is stored.
	if st.stored == 0 && st.next > m && st.stable > 0 {
		fresh := min(left, float64(st.next-m)/st.stable)
		st.next = max(st.next-javaLong(fresh*st.stable), m)
		left -= fresh
	}
	if back := min(left, st.maxP-st.stored); back > 0 {
		// Undo the stored part's cost too (non-zero only when warming up).
		cost := l.storedPermitsToWaitTime(st, st.stored+back, back)
		st.next = max(st.next-cost, m)
		st.stored += back
	}
}

// setRate is Guava's doSetRate on both levels: it resyncs st under its
// current rate, then fills cfg for the new rate and moves st to it.
func (l *Limiter) setRate(st *state, cfg *rateConfig, rate float64, now int64) {
	l.resync(st, now)
	old := st.maxP
	st.rateConfig = cfg
	st.stable = 1e6 / rate
	if l.warmup < 0 {
		st.maxP = 0 // a zero burst stays zero even at +Inf (0*Inf would be NaN)
		if l.param > 0 {
			st.maxP = l.param * rate
		}
		switch {
		case old == math.Inf(1): // stored would be NaN below
			st.stored = st.maxP
		case old == 0: // initial state: empty
			st.stored = 0
		default:
			st.stored = st.stored * st.maxP / old
		}
		return
	}
	if l.warmup == 0 {
		// No warm-up: nothing is ever stored. Guava divides 0 by 0 here and
		// can end up with NaN stored permits, which would wait for nothing.
		st.threshold, st.maxP, st.slope, st.stored = 0, 0, 0, 0
		return
	}
	w := float64(l.warmup)
	cold := st.stable * l.param
	st.threshold = 0.5 * w / st.stable
	st.maxP = st.threshold + 2.0*w/(st.stable+cold)
	st.slope = (cold - st.stable) / (st.maxP - st.threshold)
	switch {
	case old == math.Inf(1): // stored would be NaN below
		st.stored = 0
	case old == 0: // initial state: cold
		st.stored = st.maxP
	default:
		st.stored = st.stored * st.maxP / old
	}
}

// resync credits the idle time since nextFree as stored permits.
func (l *Limiter) resync(st *state, now int64) {
	if now > st.next {
		st.stored = capStored(st, st.stored+float64(now-st.next)/l.coolDown(st))
		st.next = now
	}
}

// capStored is Guava's min(maxPermits, s), except that a limiter that can
// store nothing stores nothing even when s is NaN.
func capStored(st *state, s float64) float64 {
	if st.maxP == 0 {
		return 0
	}
	return min(st.maxP, s) // like Java's Math.min, NaN wins
}

// coolDown is the micros it takes an idle limiter to store one permit.
func (l *Limiter) coolDown(st *state) float64 {
	if l.warmup < 0 {
		return st.stable
	}
	return float64(l.warmup) / st.maxP
}

// reserveEarliestAvailable is Guava's: the request goes at the current
// nextFree and pushes it by its own cost, which the next request pays.
func (l *Limiter) reserveEarliestAvailable(st *state, permits int, now int64) int64 {
	l.resync(st, now)
	at := st.next
	n := float64(permits)
	spend := min(n, st.stored)
	fresh := n - spend
	var storedCost int64 // zero for a bursty limiter: no call on its hot path
	if l.warmup >= 0 {
		storedCost = l.storedPermitsToWaitTime(st, st.stored, spend)
	}
	wait := saturatedAdd(storedCost, javaLong(fresh*st.stable))
	st.next = saturatedAdd(at, wait)
	st.stored -= spend
	return at
}

// storedPermitsToWaitTime is the integral of the cost line over
// [stored-take, stored]: zero for a bursty limiter; for a warming-up one a
// trapezoid above thresholdPermits plus the stable interval below it.
func (l *Limiter) storedPermitsToWaitTime(st *state, stored, take float64) int64 {
	if l.warmup < 0 {
		return 0
	}
	var micros int64
	if above := stored - st.threshold; above > 0 {
		t := min(above, take)
		length := st.permitsToTime(above) + st.permitsToTime(above-t)
		micros = javaLong(t * length / 2.0)
		take -= t
	}
	return saturatedAdd(micros, javaLong(st.stable*take))
}

func (st *state) permitsToTime(p float64) float64 { return st.stable + p*st.slope }

// javaLong converts as Java's (long) cast does: toward zero, saturating at the
// int64 bounds, NaN to 0. Go's int64(f) is undefined out of range.
func javaLong(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64: // float64(MaxInt64) is 2^63
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// saturatedAdd is Guava's LongMath.saturatedAdd.
func saturatedAdd(a, b int64) int64 {
	s := a + b
	if (a^b) < 0 || (a^s) >= 0 { // signs differ, or the sum kept a's sign
		return s
	}
	if a < 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}

// microsToDuration converts micros to a Duration, saturating.
func microsToDuration(m int64) time.Duration {
	const limit = math.MaxInt64 / int64(time.Microsecond)
	switch {
	case m > limit:
		return math.MaxInt64
	case m < -limit:
		return math.MinInt64
	}
	return time.Duration(m) * time.Microsecond
}

func errPermits(n int) error {
	return fmt.Errorf("%w: permits %d must be > 0", ErrInvalidArgument, n)
}
