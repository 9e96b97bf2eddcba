package algo

import (
	"sync"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// sentinelWindow is SentinelWindow: the window Alibaba Sentinel (Java
// and sentinel-golang) counts a QPS rule over, kept so that rules imported
// from Sentinel decide call for call as they did there.
//
// Sentinel's LeapArray splits the rule's interval (1 s by default) into two
// buckets of half its length, aligned to multiples of the bucket length
// since the Unix epoch, on a millisecond clock. A call passes when the
// passes counted in the current and the previous bucket, whole (unlike
// sliding_window, which weights the older bucket by its overlap), plus the
// call's permits do not exceed the limit; a passed call is counted in the
// current bucket. So up to 2x the limit can pass within one bucket length
// across an edge, as in Sentinel.
//
// It never queues: Sentinel's reject controller has no wait (maxWait must
// be 0; leaky_bucket with maxWait is Sentinel's throttling).
type sentinelWindow struct {
	mu     sync.Mutex
	bucket int64 // bucket length in ms: Window/2
	offset int64 // ns to add to the engine's Nanotime for Unix time
	cap    int64
	idx    int64 // index of the current bucket: floor(unix ms / bucket)
	cur    int64 // passes counted in bucket idx
	prev   int64 // passes counted in bucket idx-1
}

var _ Limiter = (*sentinelWindow)(nil)

// newSentinelWindow aligns the buckets to the Unix epoch as Sentinel does:
// the clock's wall time minus its monotonic reading at construction gives
// the offset, read once so that the decisions stay on the monotonic clock.
func newSentinelWindow(window time.Duration, limit float64, clk clock.Clock, now int64) *sentinelWindow {
	w := &sentinelWindow{bucket: max(1, window.Milliseconds()/2), cap: capacity(limit)}
	w.offset = clk.Now().UnixNano() - now
	w.idx = w.index(now)
	return w
}

// index is the bucket of now, on Sentinel's millisecond clock.
func (w *sentinelWindow) index(now int64) int64 {
	return floorDiv(floorDiv(now+w.offset, int64(time.Millisecond)), w.bucket)
}

// roll moves to the bucket of now; mu held. A clock that goes backwards
// keeps the current bucket.
func (w *sentinelWindow) roll(now int64) int64 {
	i := w.index(now)
	switch {
	case i <= w.idx:
	case i == w.idx+1:
		w.idx, w.prev, w.cur = i, w.cur, 0
	default:
		w.idx, w.prev, w.cur = i, 0, 0
	}
	return i
}

// untilEdge is the time from now to the end of bucket idx+k.
func (w *sentinelWindow) untilEdge(now int64, k int64) time.Duration {
	end := (w.idx+k)*w.bucket*int64(time.Millisecond) - w.offset
	return nonNeg(end - now)
}

func (w *sentinelWindow) TryAcquire(now int64, n int, _ time.Duration) Decision {
	k := int64(n)
	w.mu.Lock()
	defer w.mu.Unlock()
	if k > w.cap {
		return Decision{Verdict: Never}
	}
	w.roll(now)
	reset := w.untilEdge(now, 2) // both counted buckets gone
	if w.cur+w.prev+k <= w.cap {
		w.cur += k
		return Decision{Verdict: Granted, Remaining: float64(w.cap - w.cur - w.prev), Reset: reset}
	}
	// The previous bucket drops out at the next edge; if the current one
	// alone leaves room then, that is when the call would pass.
	retry := w.untilEdge(now, 1)
	if w.cur+k > w.cap {
		retry = reset
	}
	return Decision{Verdict: Refused, Wait: retry, Reset: reset}
}

// Refund gives permits back to the current bucket when at lies in it.
func (w *sentinelWindow) Refund(at int64, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.index(at) == w.idx {
		w.cur = max(w.cur-int64(n), 0)
	}
}

// SetLimit changes the capacity; the counts stay.
func (w *sentinelWindow) SetLimit(_ int64, limit float64) {
	w.mu.Lock()
	w.cap = capacity(limit)
	w.mu.Unlock()
}

func (w *sentinelWindow) Remaining(now int64) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	used := w.cur + w.prev
	switch i := w.index(now); {
	case i == w.idx+1:
		used = w.cur
	case i > w.idx+1:
		used = 0
	}
	return float64(max(w.cap-used, 0))
}
