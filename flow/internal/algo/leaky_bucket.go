package algo

import (
	"math"
	"sync/atomic"
	"time"
)

// leakyBucket spaces admitted calls evenly: a call of n permits goes ahead
// only n*spacing after the previous admitted call, spacing = Window/limit. It
// never bursts: idle time is not saved up. With maxWait > 0 a call that is
// early queues for its slot instead of being refused, and is refused only
// when that slot is further than maxWait away. This is Sentinel's
// throttling controller ("rate limiter" behaviour) on a virtual queue.
//
// The whole state is last, the slot of the latest admitted call, updated by
// compare-and-swap: no lock, and no goroutine ever sleeps here (the engine
// waits Decision.Wait on its own clock).
type leakyBucket struct {
	last   atomic.Int64  // slot of the latest admitted call, clock.Nanotime
	limit  atomic.Uint64 // float64 bits: permits per window
	cap    atomic.Int64  // capacity(limit): the largest call that may ever pass
	window int64
}

var _ Limiter = (*leakyBucket)(nil)

// idleLast marks a bucket that has admitted nothing: far enough in the past
// that any first call passes at once, near enough that adding costs cannot
// overflow.
const idleLast = math.MinInt64 / 4

func newLeakyBucket(window time.Duration, limit float64, now int64) *leakyBucket {
	b := &leakyBucket{window: int64(window)}
	b.last.Store(idleLast)
	b.SetLimit(now, limit)
	return b
}

// cost is the spacing of n permits in ns, computed as Sentinel's throttling
// checker computes it, ⌈n/limit·window⌉ in that order, so that a queued
// call waits to the nanosecond what it waits there (n·spacing, truncated,
// was up to 1ns shorter per call at a limit like 7/s).
func (b *leakyBucket) cost(n int) int64 {
	return int64(math.Ceil(float64(n) / math.Float64frombits(b.limit.Load()) * float64(b.window)))
}

func (b *leakyBucket) TryAcquire(now int64, n int, maxWait time.Duration) Decision {
	// A call larger than the window's quota would need the bucket idle for
	// more than a whole window and would then put more than limit permits
	// through at one instant; with a queue, an idle bucket would let it go at
	// once and charge nothing (its slot becomes now). Refuse it for good, as
	// Sentinel's throttling checker refuses a batch above its threshold.
	if int64(n) > b.cap.Load() {
		return Decision{Verdict: Never}
	}
	cost := b.cost(n)
	for {
		last := b.last.Load()
		slot := last + cost
		if slot <= now {
			// Early enough: go now. The slot becomes now, not last+cost, so
			// idle time is not banked as a burst (Sentinel does the same).
			if b.last.CompareAndSwap(last, now) {
				return Decision{Verdict: Granted, Reset: b.resetAt(now, now)}
			}
			continue // another call moved the queue: decide again
		}
		wait := slot - now
		if wait > int64(maxWait) {
			// Honest: with nothing else admitted, this call passes at slot.
			return Decision{Verdict: Refused, Wait: time.Duration(wait), Reset: b.resetAt(last, now)}
		}
		// Queue: take the slot. A failed CAS means someone took a slot in
		// between, and ours moves back by their cost, so decide again.
		if b.last.CompareAndSwap(last, slot) {
			return Decision{Verdict: Granted, Wait: time.Duration(wait), Reset: b.resetAt(slot, now)}
		}
	}
}

// resetAt is how long until the bucket, whose latest slot is last, could
// take a call of its full capacity at once.
func (b *leakyBucket) resetAt(last, now int64) time.Duration {
	return nonNeg(last + b.cost(int(b.cap.Load())) - now)
}

// Refund moves the latest slot back by the call's cost, but only while that
// slot is still the call's own (last == at): once a later call has queued
// behind it, moving back would hand that later call's slot out twice, so the
// unused slot just stays idle. For a call that went at once the slot is
// moved to at-cost, which is no earlier than where it was before the call.
func (b *leakyBucket) Refund(at int64, n int) {
	b.last.CompareAndSwap(at, at-b.cost(n))
}

// SetLimit changes the spacing for calls from now on; the latest slot stays
// where it is, so calls already queued keep their slots.
func (b *leakyBucket) SetLimit(_ int64, limit float64) {
	b.limit.Store(math.Float64bits(limit))
	b.cap.Store(capacity(limit))
}

// Remaining is the largest call that would pass at once: the idle time since
// the latest slot, in permits, up to the capacity.
func (b *leakyBucket) Remaining(now int64) float64 {
	idle := float64(now - b.last.Load())
	if idle <= 0 {
		return 0
	}
	return math.Min(math.Floor(idle/float64(b.cost(1))), float64(b.cap.Load()))
}
