package tokenbucket

import "math"

// Charge takes permits at now whatever the limiter holds, for a call that
// already ran and cost more than it reserved: stored permits go first, the
// rest is owed, as an unbounded reservation would owe it (next-free moves
// past now and later requests wait for it). It never leaves more than
// maxOwed permits owed at now (maxOwed < 0 counts as 0). It returns the
// permits charged: permits, or less when that bound cut the charge.
//
// now is clock.Nanotime of the limiter's clock; permits <= 0 charges nothing.
func (l *Limiter) Charge(now int64, permits int, maxOwed float64) float64 {
	if permits <= 0 {
		return 0
	}
	maxOwed = max(maxOwed, 0)
	m := l.micros(now)
	if l.warm != nil {
		return l.warm.charge(l, m, float64(permits), maxOwed)
	}
	return l.chargeBursty(m*1000, permits, maxOwed)
}

// chargeBursty is Charge on the one word: the bucket empties at
// max(e, t-burst) plus the charge's span, cut at t plus maxOwed's span.
func (l *Limiter) chargeBursty(t int64, permits int, maxOwed float64) float64 {
	for {
		e := l.word.Load()
		c := l.rate.Load()
		if c.interval == 0 { // +Inf: nothing costs anything
			return float64(permits)
		}
		base := max(e, t-c.burstNs)
		limit := saturatedAdd(t, c.span(maxOwed))
		if base >= limit {
			return 0 // already owes the most it may
		}
		next, charged := saturatedAdd(base, c.span(float64(permits))), float64(permits)
		if next > limit {
			next, charged = limit, math.Floor(float64(limit-base)/c.interval)
		}
		if next == e || l.word.CompareAndSwap(e, next) {
			return charged
		}
		// Another call moved the word: charge again from its new value.
	}
}

// charge is Charge on a warming-up limiter: Guava's reservation (stored
// permits first, at their warm-up cost, then fresh ones at the stable
// interval), of the most whole permits up to n whose cost keeps nextFree
// within maxOwed stable intervals of now. Cold stored permits cost more
// than the stable interval, so they count against the bound at their cost.
func (w *warmState) charge(l *Limiter, m int64, n, maxOwed float64) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := l.rate.Load()
	if c.stable == 0 { // +Inf: nothing costs anything
		return n
	}
	w.resync(c, m)
	cost := func(k float64) int64 {
		spend := min(k, w.stored)
		return saturatedAdd(c.storedPermitsToWaitTime(w.stored, spend), javaLong((k-spend)*c.stable))
	}
	limit := saturatedAdd(m, javaLong(maxOwed*c.stable))
	fits := func(k float64) bool { return saturatedAdd(w.next, cost(k)) <= limit }
	k := n
	if !fits(k) { // the most whole permits that fit: cost grows with k
		lo, hi := 0.0, math.Floor(n)
		for lo < hi {
			mid := math.Floor((lo + hi + 1) / 2)
			if fits(mid) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		k = lo
	}
	spend := min(k, w.stored)
	w.next = saturatedAdd(w.next, cost(k))
	w.stored -= spend
	return k
}

// OwedAt is what the limiter owes at now, in permits: how far next-free
// lies past now, at the stable rate (0 when it owes nothing).
func (l *Limiter) OwedAt(now int64) float64 {
	if l.warm != nil {
		w := l.warm
		w.mu.Lock()
		defer w.mu.Unlock()
		c := l.rate.Load()
		if m := l.micros(now); w.next > m && c.stable > 0 {
			return float64(w.next-m) / c.stable
		}
		return 0
	}
	t := l.micros(now) * 1000
	if e, c := l.word.Load(), l.rate.Load(); e > t && c.interval > 0 {
		return float64(e-t) / c.interval
	}
	return 0
}
