package algo

import "math"

var _ Settler = (*slidingLog)(nil)

// maxLogDebtRing bounds the ring a sliding log's charges may grow it to:
// a charge the ring cannot hold is forgiven, so maxDebt cannot make a
// log take more memory than a log of MaxSlidingLogLimit does.
const maxLogDebtRing = MaxSlidingLogLimit

// Settle on a sliding log adjusts the call's entries while they still
// count (stamped at, they have not left the window): a charge adds entries
// stamped at, or at the newest stamp when later calls stamped after it
// (the ring stays sorted; such entries leave the window no sooner), so
// long as the window holds at most capacity + maxDebt; a refund removes
// up to -delta of the entries stamped at (entries of one stamp are
// interchangeable). A charge grows the ring when it must (off the hot
// path, never past maxLogDebtRing): dropping an entry still in the window
// would forget a permit and over-admit.
func (l *slidingLog) Settle(now, at int64, delta int, maxDebt float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at <= now-l.window {
		return 0 // left the window
	}
	if delta < 0 {
		return float64(l.removeAt(at, -delta))
	}
	l.trim(now)
	k := min(int64(delta), max(l.cap+debtCap(maxDebt)-l.inWindow(now), 0))
	k = min(k, int64(max(maxLogDebtRing, len(l.buf))-l.size))
	if k <= 0 {
		return 0
	}
	if need := l.size + int(k); need > len(l.buf) {
		buf := make([]int64, need)
		for i := range l.size {
			buf[i] = l.entry(i)
		}
		l.buf, l.head = buf, 0
	}
	t := at
	if l.size > 0 {
		t = max(t, l.entry(l.size-1))
	}
	l.push(t, int(k))
	return float64(k)
}

// trim drops the entries that have left the window at now; mu held.
func (l *slidingLog) trim(now int64) {
	out := l.size - int(l.inWindow(now))
	l.head = (l.head + out) % len(l.buf)
	l.size -= out
}

// removeAt removes up to k entries stamped at and returns how many: they
// are one run of the sorted ring, found by binary search; the entries
// older than the run move up over the removed ones. mu held.
func (l *slidingLog) removeAt(at int64, k int) int {
	lo, hi := 0, l.size
	for lo < hi { // the first entry stamped at or later
		m := int(uint(lo+hi) >> 1)
		if l.entry(m) >= at {
			hi = m
		} else {
			lo = m + 1
		}
	}
	run := 0
	for lo+run < l.size && l.entry(lo+run) == at {
		run++
	}
	k = min(k, run)
	n := len(l.buf)
	for i := lo - 1; i >= 0; i-- { // entry i moves to i+k
		l.buf[(l.head+i+k)%n] = l.entry(i)
	}
	l.head = (l.head + k) % n
	l.size -= k
	return k
}

// Owed of a sliding log: the entries in the window beyond its capacity.
func (l *slidingLog) Owed(now int64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return math.Max(float64(l.inWindow(now)-l.cap), 0)
}
