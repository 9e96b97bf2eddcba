package warmup

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
