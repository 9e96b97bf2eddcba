package alerting

import "time"

// sample is one reading of a resource's lifetime counters.
type sample struct {
	at       int64 // Unix nanoseconds
	admitted uint64
	blocked  uint64
}

// window turns lifetime counters sampled at each evaluation into counts
// over the last span. It keeps a fixed ring of samples, all but the newest
// at least gap apart (a sample within gap of the one before the newest
// replaces the newest), so memory is bounded however often Evaluate is
// called, and a full ring still reaches back (capacity-2) × gap > span.
type window struct {
	buf   []sample
	first int // index of the oldest sample
	n     int
	span  int64
	gap   int64
}

func newWindow(span, interval time.Duration) window {
	gap := max(int64(interval)/2, 1)
	capacity := int(int64(span)/gap) + 3
	return window{buf: make([]sample, capacity), span: int64(span), gap: gap}
}

func (w *window) at(i int) *sample { return &w.buf[(w.first+i)%len(w.buf)] }

// add records s. A counter that went backwards or a clock that did (a new
// engine, a Fake clock Set back) starts the window afresh: deltas across
// either would be nonsense.
func (w *window) add(s sample) {
	if w.n > 0 {
		last := w.at(w.n - 1)
		switch {
		case s.at < last.at || s.admitted < last.admitted || s.blocked < last.blocked:
			w.first, w.n = 0, 0
		case w.n > 1 && s.at-w.at(w.n-2).at < w.gap:
			// The newest is still within gap of the one before: replace it,
			// so the samples before the newest stay at least gap apart.
			*last = s
			return
		}
	}
	if w.n == len(w.buf) {
		w.first = (w.first + 1) % len(w.buf)
		w.n--
	}
	*w.at(w.n) = s
	w.n++
}

// counts returns the calls admitted and blocked between the baseline and the
// newest sample. The baseline is the newest sample at least one span older
// than the newest, or the oldest one while the history is shorter.
func (w *window) counts() (admitted, blocked uint64) {
	if w.n < 2 {
		return 0, 0
	}
	last := w.at(w.n - 1)
	base := w.at(0)
	for i := w.n - 2; i >= 0; i-- {
		if s := w.at(i); last.at-s.at >= w.span {
			base = s
			break
		}
	}
	return last.admitted - base.admitted, last.blocked - base.blocked
}

// respaced returns a window over span with samples at least interval/2
// apart, holding w's samples (oldest first, as add keeps them).
func (w *window) respaced(span, interval time.Duration) window {
	nw := newWindow(span, interval)
	for i := range w.n {
		nw.add(*w.at(i))
	}
	return nw
}
