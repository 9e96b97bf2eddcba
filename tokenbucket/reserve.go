package tokenbucket

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
	// Stored is, when OK, the permits left stored just after this reservation
	// (what StoredPermitsAt(now) would then report), known from the same
	// update so no second read is needed; 0 when !OK.
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
// already committed. It is served at its own now: it sees the permits stored
// up to that instant, and a bucket that was empty then owes it the
// difference. What it takes is taken from the same store either way, so a
// stale now never makes the limiter grant more than its rate.
func (l *Limiter) TryReserveAt(now int64, permits int, maxWait time.Duration) (Reservation, error) {
	return l.reserve(now, permits, max(maxWait, 0))
}

// refill is Reservation.Refill: missing permits at cool micros each.
func refill(missing, cool float64) time.Duration {
	if !(missing > 0) {
		return 0
	}
	return time.Duration(missing * cool * 1e3)
}

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
