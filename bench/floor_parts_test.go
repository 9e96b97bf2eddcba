package bench

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// BenchmarkFloorParts prices, on this machine, the parts the speed floor's
// two sides are made of, so that bench/floor.txt shows what a ratio can
// and cannot reach:
//
//   - x/time/rate's Allow reads time.Now and takes a sync.Mutex;
//   - a flowgate Entry+Exit reads the monotonic clock once (time.Since),
//     takes the bucket with a compare-and-swap, counts the pass and the
//     completion with two atomic adds, ends the call with the Permit's
//     generation compare-and-swap, and takes and returns its call record
//     through a sync.Pool;
//   - a refused Entry reads the clock, counts the refusal twice (the
//     resource's statistics and the rule's) and allocates its *BlockError.
//
// Each part is measured alone, with nothing else in the loop.
func BenchmarkFloorParts(b *testing.B) {
	base := time.Now()
	var sink int64
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			sink += time.Now().UnixNano()
		}
	})
	b.Run("time.Since", func(b *testing.B) {
		for b.Loop() {
			sink += int64(time.Since(base))
		}
	})
	b.Run("mutex", func(b *testing.B) {
		var mu sync.Mutex
		for b.Loop() {
			mu.Lock()
			sink++
			mu.Unlock()
		}
	})
	b.Run("atomic.CAS", func(b *testing.B) {
		var x atomic.Int64
		for b.Loop() {
			v := x.Load()
			x.CompareAndSwap(v, v+1)
		}
	})
	b.Run("atomic.Add", func(b *testing.B) {
		var x atomic.Int64
		for b.Loop() {
			x.Add(1)
		}
	})
	b.Run("pool.GetPut", func(b *testing.B) {
		p := sync.Pool{New: func() any { return new([16]int64) }}
		for b.Loop() {
			p.Put(p.Get())
		}
	})
	b.Run("alloc.BlockError", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			errSink = newBlockError()
		}
	})
	if sink == 42 {
		b.Log(sink)
	}
}

var errSink error

// refuser is the refusing rule's shared description, made when rules load.
var refuser = flow.Refuser{Resource: "r", Level: flow.LevelGlobal, RuleID: "block", Reason: flow.ReasonRateLimited, Window: time.Hour}

// newBlockError allocates a refusal as a refused Entry does.
//
//go:noinline
func newBlockError() error {
	be := new(flow.BlockError)
	*be = flow.BlockError{Refuser: &refuser, RetryAfter: time.Second, Limit: 1}
	return be
}
