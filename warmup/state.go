package warmup

import (
	"math"
	"runtime"
)

// locked is the value of Limiter.word while a writer holds it. nextFree is
// never negative, so it cannot be mistaken for a real nextFree.
const locked = math.MinInt64

// state is a copy of a Limiter's mutable fields, worked on by the Guava math
// on the caller's stack while the word is held.
type state struct {
	next      int64
	stored    float64
	maxP      float64
	stable    float64
	threshold float64
	slope     float64
}

// lock takes the limiter: it swaps nextFree out of the word for locked and
// returns the state. One CAS takes the lock and reads nextFree together, and
// unlock's one store publishes the new nextFree and releases the lock.
func (l *Limiter) lock() state {
	for spins := 0; ; spins++ {
		if v := l.word.Load(); v != locked && l.word.CompareAndSwap(v, locked) {
			return l.state(v)
		}
		backoff(spins)
	}
}

// tryLock takes the limiter only if the word still holds next.
func (l *Limiter) tryLock(next int64) (state, bool) {
	if !l.word.CompareAndSwap(next, locked) {
		return state{}, false
	}
	return l.state(next), true
}

func (l *Limiter) state(next int64) state {
	return state{next: next, stored: l.stored, maxP: l.maxP, stable: l.stable,
		threshold: l.threshold, slope: l.slope}
}

// unlock writes st back and releases the limiter. The atomic store of the
// word orders the plain writes before it for the next holder.
func (l *Limiter) unlock(st *state) {
	l.stored, l.maxP, l.stable = st.stored, st.maxP, st.stable
	l.threshold, l.slope = st.threshold, st.slope
	l.word.Store(st.next)
}

// backoff spins a few times, then yields: a holder keeps the word for a few
// dozen nanoseconds unless it was descheduled, and then spinning won't help.
func backoff(spins int) {
	if spins > 8 {
		runtime.Gosched()
	}
}
