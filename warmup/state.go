package warmup

import (
	"math"
	"runtime"
	"sync/atomic"
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

// casLocked is the two-word CAS made atomic by a lock, where the CPU has no
// 16-byte CAS. Loads stay lock-free (atomic per word): a torn pair fails
// the comparison here.
func (l *Limiter) casLocked(old0, old1, new0, new1 uint64) bool {
	l.guard.Lock()
	defer l.guard.Unlock()
	if atomic.LoadUint64(&l.pair()[0]) != old0 || atomic.LoadUint64(&l.pair()[1]) != old1 {
		return false
	}
	atomic.StoreUint64(&l.pair()[0], new0)
	atomic.StoreUint64(&l.pair()[1], new1)
	return true
}

func (l *Limiter) load128Locked() (uint64, uint64) {
	l.guard.Lock()
	defer l.guard.Unlock()
	return atomic.LoadUint64(&l.pair()[0]), atomic.LoadUint64(&l.pair()[1])
}
