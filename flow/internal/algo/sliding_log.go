package algo

import (
	"fmt"
	"sync"
	"time"
)

// slidingLog is exact: it never admits more than capacity(limit) permits in
// any span (s-Window, s], because it keeps the moment of every admitted
// permit that could still matter. That is at most capacity(limit) moments:
// a call of n passes at t only when the (cap-n+1)-th newest permit left the
// window by t, and older ones left before it. So the log is a ring of
// timestamps allocated once, never a growing slice: memory is 8 bytes per
// permit of the limit, per key (the limit is bounded by MaxSlidingLogLimit).
//
// A call of n permits is n entries, stamped with the moment it goes ahead.
// With maxWait > 0 a call may queue for the moment its permits become
// available: its entries are written at once, stamped with that future
// moment, so concurrent callers count them and cannot overbook it.
// Stamps never decrease (a queued stamp is never earlier than the newest
// one), which is what keeps the ring sorted.
type slidingLog struct {
	mu     sync.Mutex
	window int64
	cap    int64   // capacity(limit)
	buf    []int64 // the ring, oldest at head; len(buf) >= cap
	head   int     // index in buf of the oldest entry
	size   int     // entries held
}

var _ Limiter = (*slidingLog)(nil)

// MaxSlidingLogLimit bounds a sliding_log's limit: it keeps one timestamp
// (8 bytes) per permit of the limit, per key.
const MaxSlidingLogLimit = 1 << 20

// newSlidingLog sizes the ring for the larger of the nominal and effective
// limits, so an adaptive factor moving between them never reallocates.
func newSlidingLog(window time.Duration, sizeFor, limit float64) (*slidingLog, error) {
	if sizeFor > MaxSlidingLogLimit {
		return nil, fmt.Errorf("sliding_log: limit %v must be <= %d (it keeps one timestamp per permit)", sizeFor, MaxSlidingLogLimit)
	}
	l := &slidingLog{window: int64(window), cap: capacity(limit)}
	l.buf = make([]int64, max(capacity(sizeFor), l.cap))
	return l, nil
}

// entry is the i-th oldest entry; mu held.
func (l *slidingLog) entry(i int) int64 { return l.buf[(l.head+i)%len(l.buf)] }

// push appends k entries stamped t, dropping the oldest when full; mu held.
func (l *slidingLog) push(t int64, k int) {
	for range k {
		if l.size == len(l.buf) {
			l.head = (l.head + 1) % len(l.buf)
			l.size--
		}
		l.buf[(l.head+l.size)%len(l.buf)] = t
		l.size++
	}
}

// earliest is when a call of k can go: once the (cap-k+1)-th newest entry
// has left the window, and never before the newest stamp; mu held.
func (l *slidingLog) earliest(now int64, k int) int64 {
	t := now
	if need := int(l.cap) - k + 1; l.size >= need {
		t = max(t, l.entry(l.size-need)+l.window)
	}
	if l.size > 0 {
		t = max(t, l.entry(l.size-1))
	}
	return t
}

// inWindow counts the entries after now-window (future stamps included), by
// binary search since the ring is sorted; mu held.
func (l *slidingLog) inWindow(now int64) int64 {
	lo, hi := 0, l.size
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.entry(m) > now-l.window {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return int64(l.size - lo)
}

func (l *slidingLog) TryAcquire(now int64, n int, maxWait time.Duration) Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int64(n) > l.cap {
		return Decision{Verdict: Never}
	}
	t := l.earliest(now, n)
	wait := time.Duration(t - now)
	if wait > 0 && wait > maxWait {
		return Decision{Verdict: Refused, Wait: wait, Reset: l.reset(now)}
	}
	l.push(t, n)
	return Decision{
		Verdict:   Granted,
		Wait:      wait,
		Remaining: float64(max(l.cap-l.inWindow(now), 0)),
		Reset:     l.reset(now),
	}
}

// reset is how long until every entry has left the window; mu held.
func (l *slidingLog) reset(now int64) time.Duration {
	if l.size == 0 {
		return 0
	}
	return nonNeg(l.entry(l.size-1) + l.window - now)
}

// Refund removes the call's n entries when they are still the newest ones
// (all stamped at): entries with one stamp are interchangeable. Otherwise a
// later call has stamped after it, removing the newest would forget that
// call's real moments, so the entries are kept.
//
// Writing the call's entries may have pushed the oldest ones out of the ring.
// A call that went at once only pushes out entries that had left the window,
// but a queued call stamped at t pushes out entries up to t-Window, which may
// still count at the refund's now. So the ring is topped back up with copies
// of min(oldest kept, at-Window): no later than what was pushed out, hence
// never more permissive than before the call (at most conservative, until
// those copies leave the window).
func (l *slidingLog) Refund(at int64, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n <= 0 || l.size < n {
		return
	}
	for i := l.size - n; i < l.size; i++ {
		if l.entry(i) != at {
			return
		}
	}
	l.size -= n
	fill := at - l.window
	if l.size > 0 {
		fill = min(fill, l.entry(0))
	}
	for range min(n, len(l.buf)-l.size) {
		l.head = (l.head - 1 + len(l.buf)) % len(l.buf)
		l.buf[l.head] = fill
		l.size++
	}
}

// SetLimit changes the capacity. A capacity above the ring's size grows the
// ring (one allocation, off the per-call path: limits change rarely), keeping
// the entries in order.
func (l *slidingLog) SetLimit(_ int64, limit float64) {
	c := min(capacity(limit), MaxSlidingLogLimit)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cap = c
	if int(c) <= len(l.buf) {
		return
	}
	buf := make([]int64, c)
	for i := range l.size {
		buf[i] = l.entry(i)
	}
	l.buf, l.head = buf, 0
}

func (l *slidingLog) Remaining(now int64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return float64(max(l.cap-l.inWindow(now), 0))
}
