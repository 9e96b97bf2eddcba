package warmup

import (
	"fmt"
	"math"
	"time"
)

// Reservation is the outcome of TryReserveAt: a small value, never allocated.
type Reservation struct {
	OK   bool          // true: permits were reserved
	Wait time.Duration // OK: how long the caller must wait before going ahead (0 = at once);
	// !OK: how long until this request would be granted with timeout 0
}

// TryReserveAt reserves permits iff the earliest available moment is within maxWait of now
// (maxWait < 0 counts as 0), exactly as Guava's tryAcquire decides, without sleeping.
// Errors only for invalid permits (<= 0). Zero allocations.
//
// now is clock.Nanotime of the clock the limiter was built with.
func (l *Limiter) TryReserveAt(now int64, permits int, maxWait time.Duration) (Reservation, error) {
	if permits <= 0 {
		return Reservation{}, errPermits(permits)
	}
	m := l.micros(now)
	timeout := max(int64(maxWait/time.Microsecond), 0)
	// Guava's canAcquire: nextFree - timeout <= now. nextFree >= 0 and
	// timeout >= 0, so the subtraction cannot overflow. A refusal decided on
	// this lock-free load is as right as one decided under the lock: the load
	// is a moment when nextFree had this value, and the caller's now is older.
	if next := l.nextFree.Load(); next-timeout > m {
		return Reservation{Wait: microsToDuration(next - m)}, nil
	}
	l.mu.Lock()
	if next := l.nextFree.Load(); next-timeout > m {
		l.mu.Unlock()
		return Reservation{Wait: microsToDuration(next - m)}, nil
	}
	at := l.reserveEarliestAvailable(permits, m)
	l.mu.Unlock()
	return Reservation{OK: true, Wait: microsToDuration(max(at-m, 0))}, nil
}

// Refund gives back permits reserved by a TryReserveAt whose call did not go ahead (a later
// level refused): it undoes that reservation's cost as far as is still possible (moves the
// next-free moment back by the fresh part, never before now; returns the stored part, never
// above maxPermits). Safe under concurrency; never creates more than maxPermits.
//
// Refund right after the reservation, with nothing in between, restores the
// limiter exactly; later it is a best effort, since the reservation's split
// between stored and fresh permits is not kept.
func (l *Limiter) Refund(now int64, permits int) {
	if permits <= 0 {
		return
	}
	m := l.micros(now)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.resync(m)
	next := l.nextFree.Load()
	left := float64(permits)
	// A reservation takes fresh permits only once the stored ones are gone, so
	// fresh permits are undone first, and only while nothing is stored.
	if l.stored == 0 && next > m && l.stable > 0 {
		fresh := math.Min(left, float64(next-m)/l.stable)
		next = max(next-javaLong(fresh*l.stable), m)
		left -= fresh
	}
	if left > 0 && l.maxP > 0 {
		back := math.Min(left, l.maxP-l.stored)
		if back > 0 {
			// Undo the stored part's cost too (non-zero only when warming up).
			cost := l.storedPermitsToWaitTime(l.stored+back, back)
			next = max(next-cost, m)
			l.stored += back
		}
	}
	l.nextFree.Store(next)
}

// setRate is Guava's doSetRate on both levels; mu held (or construction).
func (l *Limiter) setRate(rate float64, now int64) {
	l.resync(now)
	l.stable = 1e6 / rate
	old := l.maxP
	if l.warmup < 0 {
		l.maxP = 0 // a zero burst stays zero even at +Inf (0*Inf would be NaN)
		if l.param > 0 {
			l.maxP = l.param * rate
		}
		switch {
		case old == math.Inf(1): // stored would be NaN below
			l.stored = l.maxP
		case old == 0: // initial state: empty
			l.stored = 0
		default:
			l.stored = l.stored * l.maxP / old
		}
		return
	}
	if l.warmup == 0 {
		// No warm-up: nothing is ever stored. Guava divides 0 by 0 here and
		// can end up with NaN stored permits, which would wait for nothing.
		l.threshold, l.maxP, l.slope, l.stored = 0, 0, 0, 0
		return
	}
	w := float64(l.warmup)
	cold := l.stable * l.param
	l.threshold = 0.5 * w / l.stable
	l.maxP = l.threshold + 2.0*w/(l.stable+cold)
	l.slope = (cold - l.stable) / (l.maxP - l.threshold)
	switch {
	case old == math.Inf(1): // stored would be NaN below
		l.stored = 0
	case old == 0: // initial state: cold
		l.stored = l.maxP
	default:
		l.stored = l.stored * l.maxP / old
	}
}

// resync credits the idle time since nextFree as stored permits; mu held.
func (l *Limiter) resync(now int64) {
	if next := l.nextFree.Load(); now > next {
		l.stored = l.capStored(l.stored + float64(now-next)/l.coolDown())
		l.nextFree.Store(now)
	}
}

// capStored is Guava's min(maxPermits, s), except that a limiter that can
// store nothing stores nothing even when s is NaN.
func (l *Limiter) capStored(s float64) float64 {
	if l.maxP == 0 {
		return 0
	}
	return math.Min(l.maxP, s)
}

// coolDown is the micros it takes an idle limiter to store one permit.
func (l *Limiter) coolDown() float64 {
	if l.warmup < 0 {
		return l.stable
	}
	return float64(l.warmup) / l.maxP
}

// reserveEarliestAvailable is Guava's: the request goes at the current
// nextFree and pushes it by its own cost, which the next request pays. mu held.
func (l *Limiter) reserveEarliestAvailable(permits int, now int64) int64 {
	l.resync(now)
	at := l.nextFree.Load()
	n := float64(permits)
	spend := math.Min(n, l.stored)
	fresh := n - spend
	wait := saturatedAdd(l.storedPermitsToWaitTime(l.stored, spend), javaLong(fresh*l.stable))
	l.nextFree.Store(saturatedAdd(at, wait))
	l.stored -= spend
	return at
}

// storedPermitsToWaitTime is the integral of the cost line over
// [stored-take, stored]: zero for a bursty limiter; for a warming-up one a
// trapezoid above thresholdPermits plus the stable interval below it.
func (l *Limiter) storedPermitsToWaitTime(stored, take float64) int64 {
	if l.warmup < 0 {
		return 0
	}
	var micros int64
	if above := stored - l.threshold; above > 0 {
		t := math.Min(above, take)
		length := l.permitsToTime(above) + l.permitsToTime(above-t)
		micros = javaLong(t * length / 2.0)
		take -= t
	}
	return saturatedAdd(micros, javaLong(l.stable*take))
}

func (l *Limiter) permitsToTime(p float64) float64 { return l.stable + p*l.slope }

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
