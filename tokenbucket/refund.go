package tokenbucket

// Refund gives back permits reserved by a TryReserveAt whose call did not go ahead (a later
// level refused): it undoes that reservation's cost as far as is still possible (moves the
// next-free moment back by the fresh part, never before now; returns the stored part, never
// above maxPermits). Safe under concurrency; never creates more than maxPermits.
//
// With no other reservation in between, Refund leaves the limiter as it would
// be had the reservation never been made: right after it, and for a bursty
// limiter later too; exactly, but that a bursty grant partly from the store
// and partly fresh comes back within a microsecond (see bursty.go).
// Otherwise it is a best effort: the split of a reservation between stored
// and fresh permits is not kept.
func (l *Limiter) Refund(now int64, permits int) {
	if permits <= 0 {
		return
	}
	m := l.micros(now)
	if l.warm != nil {
		l.warm.refund(l, m, permits)
		return
	}
	l.refundBursty(m, permits)
}
