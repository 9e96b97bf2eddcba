package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// peerHist is a lock-free latency histogram with log-linear buckets: 16
// per power of two of nanoseconds, so a quantile is within 1/16 (about 6%)
// of the truth from 1 ns to minutes, in 1 KiB of counters allocated once.
// Fine buckets matter here: a leased decision takes well under a
// microsecond, a Redis round trip tens of them.
type peerHist struct {
	n [64 * 16]atomic.Uint64
}

func peerBucket(ns int64) int {
	if ns < 16 {
		return int(max(ns, 0))
	}
	e := bits.Len64(uint64(ns)) - 1 // 2^e <= ns < 2^(e+1), e >= 4
	sub := int(ns>>(e-4)) & 15      // the 4 bits below the leading one
	return (e-3)*16 + sub
}

// peerBucketLow is the smallest value that falls in bucket i.
func peerBucketLow(i int) int64 {
	if i < 16 {
		return int64(i)
	}
	e := i/16 + 3
	return int64(16+i%16) << (e - 4)
}

func (h *peerHist) record(d time.Duration) { h.n[peerBucket(int64(d))].Add(1) }

// quantile returns the middle of the bucket holding quantile q.
func (h *peerHist) quantile(q float64) time.Duration {
	var total uint64
	for i := range h.n {
		total += h.n[i].Load()
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i := range h.n {
		seen += h.n[i].Load()
		if seen >= want {
			lo, hi := peerBucketLow(i), peerBucketLow(i+1)
			return time.Duration((lo + hi) / 2)
		}
	}
	return 0
}
