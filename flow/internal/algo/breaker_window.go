package algo

import (
	"sync/atomic"
	"time"
)

// breakerWindow counts a breaker's completed calls and bad ones (errors, or
// slow calls for BreakerSlowRatio) over its Window, in n buckets aligned to
// multiples of their length: the window slides by 1/n of itself, and one
// bucket is a tumbling window (Sentinel's breakers count that way: Java
// always, sentinel-golang unless told a bucket count).
//
// Each bucket is one word, so adding an outcome is one compare-and-swap
// and no count is lost when a bucket turns over to a new epoch (a separate
// epoch word would leave a moment where a count lands in a bucket about to
// be zeroed):
//
//	bits 40-63 the bucket's epoch (now / bucket length), modulo 2^24
//	bits 20-39 completed calls
//	bits 0-19  bad calls
//
// A bucket whose 20-bit count would overflow has both counts halved, which
// keeps the ratio. An epoch tag only matches modulo 2^24: a bucket left
// untouched for exactly a multiple of 2^24 bucket lengths (19 days at the
// default 1s window) would count again for one bucket length.
type breakerWindow struct {
	buckets  []atomic.Uint64 // inline[:n] when n <= len(inline): no second allocation
	inline   [DefaultBreakerBuckets]atomic.Uint64
	bucketNs int64
	off      int64 // the clock origin's phase in a bucket: now+off is aligned
}

const (
	// DefaultBreakerBuckets is the bucket count of a breaker window when
	// none is given.
	DefaultBreakerBuckets = 10
	bwCountBits           = 20
	bwCountMax            = 1<<bwCountBits - 1
	bwTagShift            = 2 * bwCountBits
	bwTagMask             = 1<<(64-bwTagShift) - 1
	// MinBreakerWindow is the shortest breaker window: 1ms per bucket at
	// the default bucket count.
	MinBreakerWindow = 10 * time.Millisecond
	// MinBreakerBucket is the shortest bucket of a breaker window.
	MinBreakerBucket = time.Millisecond
)

// init sets the window's span and bucket count (n < 1 counts as the
// default). origin is clock.Origin's Unix ns: buckets begin at whole
// multiples of their length since the Unix epoch, as Sentinel's do, which
// matters most to a tumbling window (one bucket).
func (w *breakerWindow) init(window time.Duration, n int, origin int64) {
	if n < 1 {
		n = DefaultBreakerBuckets
	}
	if n <= len(w.inline) {
		w.buckets = w.inline[:n]
	} else {
		w.buckets = make([]atomic.Uint64, n)
	}
	w.bucketNs = max(int64(window)/int64(n), 1)
	w.off = floorMod(origin, w.bucketNs)
}

// add counts one completed call at now, bad or not, and returns the
// completed calls its bucket now holds.
func (w *breakerWindow) add(now int64, bad bool) uint64 {
	idx := floorDiv(now+w.off, w.bucketNs)
	tag := uint64(idx) & bwTagMask
	b := &w.buckets[uint64(idx)%uint64(len(w.buckets))]
	for {
		old := b.Load()
		var c, k uint64
		t := tag
		switch ot := old >> bwTagShift; {
		case old == 0: // empty (never used, or reset): start it
		case ot == tag: // our epoch: add to it
			c, k = old>>bwCountBits&bwCountMax, old&bwCountMax
		case (ot-tag)&bwTagMask < 1<<(63-bwTagShift):
			// The slot moved on to a later epoch while this caller was
			// held up (preempted between reading the clock and here):
			// count in that bucket rather than wipe it.
			t, c, k = ot, old>>bwCountBits&bwCountMax, old&bwCountMax
		}
		// Otherwise the slot holds an older epoch: start it afresh.
		if c == bwCountMax {
			c, k = c>>1, k>>1
		}
		c++
		if bad {
			k++
		}
		if b.CompareAndSwap(old, t<<bwTagShift|c<<bwCountBits|k) {
			return c
		}
	}
}

// sum adds up the buckets of the window that ends at now.
func (w *breakerWindow) sum(now int64) (completed, bad uint64) {
	cur := uint64(floorDiv(now+w.off, w.bucketNs)) & bwTagMask
	n := uint64(len(w.buckets))
	for i := range w.buckets {
		v := w.buckets[i].Load()
		if (cur-v>>bwTagShift)&bwTagMask < n {
			completed += v >> bwCountBits & bwCountMax
			bad += v & bwCountMax
		}
	}
	return completed, bad
}

// reset forgets every outcome.
func (w *breakerWindow) reset() {
	for i := range w.buckets {
		w.buckets[i].Store(0)
	}
}
