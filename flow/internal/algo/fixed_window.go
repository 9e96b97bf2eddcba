package algo

import (
	"sync"
	"time"
)

// fixedWindow counts permits per window. Windows are aligned to whole
// multiples of Window since the Unix epoch on the engine's clock (see
// clock.Origin), as Sentinel's and the cluster scripts' windows are: every
// key of a rule, and every process whose clock agrees, shares the same
// boundaries. A cluster rule's local fallback therefore counts in the same
// seconds Redis did, instead of windows that straddle two of them.
//
// Its flaw is the one the seed articles document, kept honest here: the
// count restarts at each boundary, so up to 2*limit permits can pass within a
// span much shorter than Window: limit at the very end of one window and
// limit at the very start of the next. Use sliding_log when that matters.
//
// With maxWait > 0 a refused call may reserve permits in the NEXT window
// (and no further) and wait for it to open; the reservation is counted at
// once in next, so concurrent callers cannot overbook that window either.
type fixedWindow struct {
	mu     sync.Mutex
	window int64
	off    int64 // the clock origin's phase in the window: now+off is aligned
	cap    int64 // capacity(limit)
	idx    int64 // index of the current window: floor(now / window)
	cur    int64 // permits taken in window idx
	next   int64 // permits reserved in window idx+1 by queued calls
}

var _ Limiter = (*fixedWindow)(nil)

// newFixedWindow counts from now; origin is clock.Origin's Unix ns.
func newFixedWindow(window time.Duration, limit float64, now, origin int64) *fixedWindow {
	w := &fixedWindow{window: int64(window), off: floorMod(origin, int64(window)), cap: capacity(limit)}
	w.idx = floorDiv(now+w.off, w.window)
	return w
}

// Window is the index of the window now falls in (see Windowed).
func (w *fixedWindow) Window(now int64) int64 { return floorDiv(now+w.off, w.window) }

var _ Windowed = (*fixedWindow)(nil)

// roll moves to the window of now (already shifted by off); mu held. A
// clock that goes backwards keeps the current window rather than reopening an old one.
func (w *fixedWindow) roll(now int64) {
	i := floorDiv(now, w.window)
	switch {
	case i <= w.idx:
	case i == w.idx+1:
		w.idx, w.cur, w.next = i, w.next, 0
	default:
		w.idx, w.cur, w.next = i, 0, 0
	}
}

func (w *fixedWindow) TryAcquire(now int64, n int, maxWait time.Duration) Decision {
	k, now := int64(n), now+w.off
	w.mu.Lock()
	defer w.mu.Unlock()
	if k > w.cap {
		return Decision{Verdict: Never}
	}
	w.roll(now)
	toEnd := nonNeg((w.idx+1)*w.window - now)
	if w.cur+k <= w.cap {
		w.cur += k
		return Decision{Verdict: Granted, Remaining: float64(w.cap - w.cur), Reset: toEnd}
	}
	if w.next+k <= w.cap {
		if toEnd <= maxWait {
			w.next += k
			return Decision{Verdict: Granted, Wait: toEnd, Reset: toEnd}
		}
		return Decision{Verdict: Refused, Wait: toEnd, Reset: toEnd}
	}
	// The next window is booked up by queued calls; the one after is empty.
	return Decision{Verdict: Refused, Wait: toEnd + time.Duration(w.window), Reset: toEnd}
}

// Refund gives permits back to the window they were counted in: next when
// at lies in the next window (a queued call refunded at now+wait), else cur.
// A refund at a moment in the current window while calls are queued for the
// next one is ambiguous (it may be a queued call refunded at its plain now),
// so it is kept: giving back to the wrong window could overbook the other.
func (w *fixedWindow) Refund(at int64, n int) {
	k := int64(n)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch i := floorDiv(at+w.off, w.window); {
	case i == w.idx+1:
		w.next = max(w.next-k, 0)
	case i == w.idx && w.next == 0:
		w.cur = max(w.cur-k, 0)
	}
}

// SetLimit changes the capacity; the counts stay, so a lowered limit may
// leave the current window over it until the window ends.
func (w *fixedWindow) SetLimit(_ int64, limit float64) {
	w.mu.Lock()
	w.cap = capacity(limit)
	w.mu.Unlock()
}

func (w *fixedWindow) Remaining(now int64) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	used := w.cur
	switch i := floorDiv(now+w.off, w.window); {
	case i == w.idx+1:
		used = w.next
	case i > w.idx+1:
		used = 0
	}
	return float64(max(w.cap-used, 0))
}
