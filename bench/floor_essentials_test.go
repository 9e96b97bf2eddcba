package bench

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// essRecord stands for a pass's call record: taken from a sync.Pool,
// ended by a generation compare-and-swap.
type essRecord struct {
	gen   atomic.Uint64
	taken [4]int64
}

// essResource stands for a compiled resource: a token-bucket word and
// the statistics' pass and completion counters, on separate cache lines
// as the engine keeps them.
type essResource struct {
	word atomic.Int64
	_    [56]byte
	pass atomic.Int64
	_    [56]byte
	done atomic.Int64
}

// BenchmarkFloorEssentials composes, in one loop, the parts a one-rule
// pass cannot do without: find the resource by name in a Go map, read the
// monotonic clock once, take the bucket with a compare-and-swap, take a
// call record from a sync.Pool, count the pass, end the call with a
// generation compare-and-swap, count the completion, return the record.
// Set against BenchmarkPeersPass in the same run, it tells how much of a
// pass is the design's own cost and how much the code around it; "allow"
// does the same for x/time/rate's Allow. Neither is a limiter: the bucket
// always has room, and nothing is decided.
func BenchmarkFloorEssentials(b *testing.B) {
	res := map[string]*essResource{"r": new(essResource)} // PeersPass's engine has one resource
	pool := sync.Pool{New: func() any { return new(essRecord) }}
	base := time.Now()
	const interval = int64(time.Second) / passRate
	name := "r"
	b.Run("pass", func(b *testing.B) {
		for b.Loop() {
			r := res[name]
			now := int64(time.Since(base))
			for { // a bucket that always has room: next free moment, one interval per permit
				e := r.word.Load()
				if r.word.CompareAndSwap(e, max(e, now-int64(time.Second))+interval) {
					break
				}
			}
			c := pool.Get().(*essRecord)
			g := c.gen.Load()
			r.pass.Add(1)
			c.taken[0] = now
			if c.gen.CompareAndSwap(g, g+1) { // Exit
				r.done.Add(1)
			}
			pool.Put(c)
		}
	})
	// What x/time/rate's Allow is made of, for comparison: a time.Now
	// (wall and monotonic) and a mutex around the token arithmetic.
	b.Run("allow", func(b *testing.B) {
		var mu sync.Mutex
		var last time.Time
		tokens := float64(passRate)
		for b.Loop() {
			t := time.Now()
			mu.Lock()
			tokens = min(tokens+t.Sub(last).Seconds()*passRate, passRate) - 1
			last = t
			mu.Unlock()
		}
		if tokens == 42 {
			b.Log(tokens)
		}
	})
}
