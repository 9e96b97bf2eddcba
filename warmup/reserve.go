package warmup

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/flowgate/flowgate/internal/hotpath"
)

// The state lives in two 64-bit words updated together by a 16-byte CAS, so
// a grant is one atomic instruction and the Guava math runs on a private
// copy before it, exactly as written. Word 0 is nextFree in micros (never
// negative, saturating at maxNext instead of Java's Long.MAX_VALUE: 2^56 us
// is over two thousand years) with the version of the rate it was computed
// under in its top byte; word 1 is the stored permits as float64 bits.
//
// The rate (stable interval, maxPermits, warm-up threshold and slope) is an
// immutable rateConfig swapped by SetRate. A call uses a rateConfig only if
// its version matches the state's, and SetRate's CAS bumps the version, so a
// call never mixes one rate with the state of another.
const (
	verShift = 56
	maxNext  = 1<<verShift - 1
)

// rateConfig is what SetRate changes, besides the state.
type rateConfig struct {
	stable    float64 // stableIntervalMicros
	maxP      float64 // maxPermits
	threshold float64 // warming up: thresholdPermits
	slope     float64 // warming up: slope of the cost line above threshold
	ver       uint64  // 0..255, matches the state's top byte
	// WithStoredPermits as given at construction, carried from rate to rate
	// so Clone starts a limiter as the constructor did.
	optStored float64
	hasStored bool
}

// initialStored is what a limiter built at this rate starts with: Guava's
// (bursty empty, warming up cold), or WithStoredPermits clamped.
func (c *rateConfig) initialStored(bursty bool) float64 {
	switch {
	case c.hasStored:
		return max(0, min(c.optStored, c.maxP))
	case bursty:
		return 0
	}
	return c.maxP
}

// state is a private copy of the two words, with the rate they were read
// under (embedded: the Guava math reads st.stable, st.maxP...).
type state struct {
	next   int64
	stored float64
	*rateConfig
}

func decode(w0, w1 uint64, c *rateConfig) state {
	return state{next: int64(w0 & maxNext), stored: math.Float64frombits(w1), rateConfig: c}
}

func encodeNext(next int64, ver uint64) uint64 {
	return uint64(min(next, maxNext)) | (ver&0xff)<<verShift
}

// The state's two words are read and written as one with the 16-byte CAS
// of package hotpath where the CPU has it, and under l.guard where it does
// not. hotpath explains the cache-line costs these calls are shaped by.

// useCAS16 is hotpath.HasCAS16; tests turn it off to run the locked path.
var useCAS16 = hotpath.HasCAS16

func (l *Limiter) cas(old0, old1, new0, new1 uint64) bool {
	if useCAS16 {
		return hotpath.CAS128(l.pair(), old0, old1, new0, new1)
	}
	return l.casLocked(old0, old1, new0, new1)
}

func (l *Limiter) load128() (uint64, uint64) {
	if useCAS16 {
		return hotpath.Load128(l.pair())
	}
	return l.load128Locked()
}

func (l *Limiter) load0() uint64 { return atomic.LoadUint64(&l.pair()[0]) }
func (l *Limiter) load1() uint64 { return atomic.LoadUint64(&l.pair()[1]) }

// pair is the two state words, 16-byte aligned (see hotpath.Pair16), found
// from unsafe.Pointer(l), not &l.words: words is the first field, and
// taking its address would nil-check l with a load from the state's line.
func (l *Limiter) pair() *[2]uint64 { return hotpath.Pair16(unsafe.Pointer(l)) }

// snapshot reads the state for a CAS: the words, and a copy decoded under
// the matching rate. The two loads may be torn; the CAS then fails and the
// caller reads again.
func (l *Limiter) snapshot() (w0, w1 uint64, st state) {
	for spins := 0; ; spins++ {
		w0 = l.load0()
		c := l.rate.Load()
		w1 = l.load1()
		if w0>>verShift == c.ver {
			return w0, w1, decode(w0, w1, c)
		}
		backoff(spins) // a SetRate is between its CAS and its store of the rate
	}
}

// read returns a consistent copy of the state, for callers that only look.
func (l *Limiter) read() state {
	for spins := 0; ; spins++ {
		w0, w1 := l.load128()
		if c := l.rate.Load(); w0>>verShift == c.ver {
			return decode(w0, w1, c)
		}
		backoff(spins)
	}
}

// commit publishes st if the state still holds w0, w1.
func (l *Limiter) commit(w0, w1 uint64, st *state) bool {
	return l.cas(w0, w1, encodeNext(st.next, w0>>verShift), math.Float64bits(st.stored))
}

// lostRace is called when a CAS failed because another call changed the
// state first (or the read was torn). Another call succeeding is progress,
// so the first few retries go at once: a yield costs several times a
// retry, and when each core runs one caller it only hands the line to the
// other core for longer (EntryExitPassParallel lost a fifth of its CASes
// and spent a sixth of its time in the scheduler). Past a few it yields,
// so that a caller preempted while goroutines outnumber cores gets on.
func lostRace(spins int) { backoff(spins) }

// backoff yields after a few tries: what we wait for is a SetRate between
// two of its instructions, or a CAS lost to a concurrent grant.
func backoff(spins int) {
	if spins > 4 {
		runtime.Gosched()
	}
}

// micros turns a clock.Nanotime reading into Guava's nowMicros: whole
// microseconds since construction. A reading from before construction (the
// engine reads the clock once, then may create a limiter) counts as 0.
func (l *Limiter) micros(now int64) int64 {
	if d := now - l.origin; d > 0 {
		return int64(uint64(d) / 1000) // unsigned: no sign fix-up
	}
	return 0
}

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
			} else if next-max(int64(maxWait/time.Microsecond), 0) > m {
				return Reservation{Wait: microsToDuration(next - m)}, nil
			}
		}
		c := l.rate.Load()
		if w0>>verShift != c.ver {
			backoff(spins) // a SetRate is between its CAS and its store of the rate
			continue
		}
		st := decode(w0, w1, c)
		var at int64
		var cool float64  // read now: l is not read after the CAS
		if l.warmup < 0 { // the usual case
			at, st.next, st.stored = reserveBursty(st.next, st.stored, c, permits, eff)
			cool = c.stable // coolDown of a bursty limiter
		} else {
			at = l.reserveEarliestAvailable(&st, permits, eff)
			cool = l.coolDown(&st)
		}
		// commit and cas written out: two calls less between the loads
		// and the CAS.
		new0, new1 := encodeNext(st.next, w0>>verShift), math.Float64bits(st.stored)
		var won bool
		if useCAS16 {
			won = hotpath.CAS128(l.pair(), w0, w1, new0, new1)
		} else {
			won = l.casLocked(w0, w1, new0, new1)
		}
		if won {
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

// resync credits the idle time since nextFree as stored permits.
func (l *Limiter) resync(st *state, now int64) {
	if now > st.next {
		st.stored = capStored(st, st.stored+float64(now-st.next)/l.coolDown(st))
		st.next = now
	}
}

// capStored is Guava's min(maxPermits, s), except that a limiter that can
// store nothing stores nothing even when s is NaN.
func capStored(st *state, s float64) float64 { return capStoredMax(st.maxP, s) }

func capStoredMax(maxP, s float64) float64 {
	if maxP == 0 {
		return 0
	}
	return min(maxP, s) // like Java's Math.min, NaN wins
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
	if l.warmup < 0 {
		var at int64
		at, st.next, st.stored = reserveBursty(st.next, st.stored, st.rateConfig, permits, now)
		return at
	}
	l.resync(st, now)
	at := st.next
	n := float64(permits)
	spend := min(n, st.stored)
	fresh := n - spend
	var storedCost int64 // zero for a bursty limiter: no call on its hot path
	if l.warmup >= 0 {
		storedCost = l.storedPermitsToWaitTime(st, st.stored, spend)
	}
	if fresh == 0 && storedCost == 0 {
		// Served from free stored permits, the usual grant: wait is 0 and
		// nextFree stays, as the general line below computes it.
		st.stored -= spend
		return at
	}
	wait := saturatedAdd(storedCost, javaLong(fresh*st.stable))
	st.next = saturatedAdd(at, wait)
	st.stored -= spend
	return at
}

// reserveBursty is reserveEarliestAvailable for a bursty limiter, on the
// state's two numbers: its stored permits cost no time and it stores one
// per stable interval, so resync and the wait reduce to these lines. Small
// enough to inline: tryReserveAt's usual grant makes no call for it.
func reserveBursty(next int64, stored float64, c *rateConfig, permits int, now int64) (at, newNext int64, newStored float64) {
	if now > next { // resync
		stored = capStoredMax(c.maxP, stored+float64(now-next)/c.stable)
		next = now
	}
	n := float64(permits)
	spend := min(n, stored)
	if fresh := n - spend; fresh != 0 {
		return next, saturatedAdd(next, javaLong(fresh*c.stable)), stored - spend
	}
	return next, next, stored - spend // paid from stored permits: no wait
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
