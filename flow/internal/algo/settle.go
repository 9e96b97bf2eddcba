package algo

import (
	"math"
)

// Settler is a Limiter whose calls can be settled after they ran, when
// their real cost is known (flow.WithActualCost): the call took its
// estimate at at (the moment TryAcquire counted it, now+Wait for a queued
// call), and its actual cost differs by delta permits.
//
//   - delta > 0: the call cost more. The extra is taken now even when
//     nothing is left, a debt that later calls pay by waiting or being
//     refused, but never so much that more than maxDebt permits are owed
//     (the limiter's state stays within limit + maxDebt).
//   - delta < 0: the call cost less. The unused part is given back, never
//     more than the call took.
//
// Settle returns the permits it charged or gave back (a magnitude, at most
// |delta|); less than |delta| when maxDebt cut a charge or the window the
// call was counted in has closed. Concurrency caps hold no cost and are not
// Settlers; the engine refuses the option for them.
//
// Owed is what the limiter owes at now, in permits: the cost admitted
// beyond what its limit allowed, still to be paid by later calls.
type Settler interface {
	Settle(now, at int64, delta int, maxDebt float64) float64
	Owed(now int64) float64
}

var (
	_ Settler = (*Bucket)(nil)
	_ Settler = (*leakyBucket)(nil)
	_ Settler = (*fixedWindow)(nil)
	_ Settler = (*slidingWindow)(nil)
)

// Settle on a token bucket (bursty or warming up): a charge spends stored
// permits, then owes (Guava's next-free moves past now, as a reservation
// without a timeout moves it); a refund gives the permits back at now, to
// the debt first, never above the bucket's capacity.
func (b *Bucket) Settle(now, _ int64, delta int, maxDebt float64) float64 {
	if delta < 0 {
		b.l.Refund(now, -delta)
		return float64(-delta)
	}
	return b.l.Charge(now, delta, maxDebt)
}

// Settle on a leaky bucket moves the queue's end: a charge pushes the
// latest slot later by the extra's spacing (from now, when the queue is
// empty), at most maxDebt permits' spacing past now; a refund pulls it
// earlier by the unused spacing, never before now, so no idle time is
// banked as a burst.
func (b *leakyBucket) Settle(now, _ int64, delta int, maxDebt float64) float64 {
	for {
		last := b.last.Load()
		var next int64
		var done float64
		if delta < 0 {
			if last <= now {
				return 0 // nothing queued: nothing to give back
			}
			next = max(last-b.cost(-delta), now)
			done = math.Min(float64(-delta), math.Floor(float64(last-next)/float64(b.cost(1))))
		} else {
			from, limit := max(last, now), now+b.costOf(maxDebt)
			if from >= limit {
				return 0
			}
			next, done = min(from+b.cost(delta), limit), float64(delta)
			if next == limit {
				done = math.Min(done, math.Floor(float64(limit-from)/float64(b.cost(1))))
			}
		}
		if b.last.CompareAndSwap(last, next) {
			return done
		}
	}
}

// costOf is the spacing of p permits, p possibly fractional, saturating.
func (b *leakyBucket) costOf(p float64) int64 {
	c := p / math.Float64frombits(b.limit.Load()) * float64(b.window)
	if c >= math.MaxInt64/4 {
		return math.MaxInt64 / 4
	}
	return int64(math.Ceil(c))
}

// Settle on a fixed window adjusts the window the call was counted in,
// while it is still open (the current one, or the next for a queued call):
// a charge adds to its count, up to limit + maxDebt; a refund takes from
// it, never below zero. Once that window has closed there is nothing to
// settle against: the call's cost stays as estimated.
func (w *fixedWindow) Settle(now, at int64, delta int, maxDebt float64) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roll(now + w.off)
	var count *int64
	switch i := floorDiv(at+w.off, w.window); i {
	case w.idx:
		count = &w.cur
	case w.idx + 1:
		count = &w.next
	default:
		return 0 // closed
	}
	return settleCount(count, delta, w.cap+debtCap(maxDebt))
}

// settleCount adds delta to *count, a charge no further than ceiling, a
// refund no lower than zero, and returns what moved.
func settleCount(count *int64, delta int, ceiling int64) float64 {
	k := int64(delta)
	if k < 0 {
		k = max(k, -*count)
	} else {
		k = min(k, max(ceiling-*count, 0))
	}
	*count += k
	return math.Abs(float64(k))
}

// debtCap is maxDebt as a whole count of permits, saturating.
func debtCap(maxDebt float64) int64 {
	if !(maxDebt > 0) {
		return 0
	}
	return int64(math.Min(math.Floor(maxDebt), 1<<40))
}

// Settle on a sliding window adjusts the sub-window the call was counted
// in while it still counts (it has not left the window): a charge adds to
// it so long as the window's total stays within limit + maxDebt; a refund
// takes from it, never below zero.
func (s *slidingWindow) Settle(now, at int64, delta int, maxDebt float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roll(now + s.off)
	b := int64(len(s.counts)) - 1
	j := floorDiv(at+s.off, s.width) - (s.head - b)
	if j < 0 || j > b {
		return 0 // left the window (or a clock gone backwards)
	}
	whole, oldest := s.sums()
	total := int64(whole + oldest)
	c := &s.counts[s.slot(int(j))]
	count := int64(*c)
	moved := settleCount(&count, delta, count+max(s.cap+debtCap(maxDebt)-total, 0))
	*c = int32(min(count, math.MaxInt32))
	return moved
}

// Owed of a token bucket: its debt, in permits.
func (b *Bucket) Owed(now int64) float64 { return b.l.OwedAt(now) }

// Owed of a leaky bucket: the queue's end past now, in permits of spacing.
func (b *leakyBucket) Owed(now int64) float64 {
	return math.Max(float64(b.last.Load()-now), 0) / float64(b.cost(1))
}

// Owed of a fixed window: the current window's count above its capacity.
func (w *fixedWindow) Owed(now int64) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roll(now + w.off)
	return float64(max(w.cur-w.cap, 0))
}

// Owed of a sliding window: its estimate above its capacity.
func (s *slidingWindow) Owed(now int64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, f := s.roll(now + s.off)
	whole, oldest := s.sums()
	return math.Max(whole+oldest*(1-f)-float64(s.cap), 0)
}
