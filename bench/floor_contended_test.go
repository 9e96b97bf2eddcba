package bench

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// contendedWord is one word every P updates, alone on its cache line.
type contendedWord struct {
	_ [64]byte
	sync.Mutex
	v int64 // the mutex's word
	w atomic.Int64
	_ [64]byte
}

// localWork stands for what a call does besides updating the shared word:
// n steps of a linear congruential generator, which the compiler can
// neither drop nor overlap across steps.
func localWork(n int, x uint64) uint64 {
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// BenchmarkFloorContended prices the parallel floor's shape without either
// library: every P updates one shared word, with the same local work
// between updates, in four ways.
//
//   - local: no shared word, the local work alone;
//   - load+cas: read the word, compute, compare-and-swap, retry on a miss
//     (how the token bucket commits a grant);
//   - mutex: a sync.Mutex around a read and a write (how x/time/rate's
//     Allow does);
//   - add: one atomic add, which needs no read first (an update whose new
//     value never depends on the old one but by a constant).
//
// Under contention each way pays for the cache line moving between the
// cores; comparing them tells whether a read before the write (the bucket,
// the mutex) costs more than an add that needs none. The local work is
// given at 0 and at about a pass's own time on the machine bench/README
// names.
func BenchmarkFloorContended(b *testing.B) {
	for _, n := range []int{0, 70} {
		b.Run(fmt.Sprintf("work=%d/local", n), func(b *testing.B) {
			contended(b, n, func(*contendedWord, int64) {})
		})
		b.Run(fmt.Sprintf("work=%d/load+cas", n), func(b *testing.B) {
			contended(b, n, func(c *contendedWord, d int64) {
				for {
					e := c.w.Load()
					if c.w.CompareAndSwap(e, e+d) {
						return
					}
				}
			})
		})
		b.Run(fmt.Sprintf("work=%d/mutex", n), func(b *testing.B) {
			contended(b, n, func(c *contendedWord, d int64) {
				c.Lock()
				c.v += d
				c.Unlock()
			})
		})
		b.Run(fmt.Sprintf("work=%d/add", n), func(b *testing.B) {
			contended(b, n, func(c *contendedWord, d int64) { c.w.Add(d) })
		})
	}
}

// contended runs update on one shared word from every P, n steps of local
// work apart, and checks that no update was lost.
func contended(b *testing.B, n int, update func(*contendedWord, int64)) {
	var c contendedWord
	var calls atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		x, k := uint64(1), int64(0)
		for pb.Next() {
			x = localWork(n, x)
			update(&c, 1+int64(x>>63))
			k += 1 + int64(x>>63)
		}
		calls.Add(k)
	})
	if got := c.w.Load() + c.v; got != 0 && got != calls.Load() {
		b.Fatalf("the word holds %d, want the %d added", got, calls.Load())
	}
}
