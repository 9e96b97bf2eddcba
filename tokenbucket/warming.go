package tokenbucket

import (
	"math"
	"sync"

	"github.com/flowgate/flowgate/clock"
)

// A warming-up limiter keeps Guava's state as Guava does, two numbers under
// a lock, as x/time/rate keeps its own. Its stored permits cost time (the
// trapezoid below), so unlike a bursty limiter's they do not fold into one
// instant, and its calls are rarer than the token buckets' (a rule's
// warm-up, not every user key).
type warmState struct {
	mu     sync.Mutex
	next   int64   // Guava's nextFreeTicketMicros, since the limiter's origin
	stored float64 // Guava's storedPermits
}

// tryReserve is Guava's tryAcquire without the sleep: it reserves iff
// nextFree - timeout <= now (timeout in micros; unbounded reserves always).
func (w *warmState) tryReserve(l *Limiter, m int64, permits int, timeout int64) Reservation {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := l.rate.Load() // changed only under mu
	if timeout != unbounded && w.next-timeout > m {
		return Reservation{Wait: microsToDuration(w.next - m)}
	}
	at := w.reserve(c, permits, m)
	stored := storedOrMax(w.stored, c.maxP)
	return Reservation{OK: true, Wait: microsToDuration(max(at-m, 0)), Stored: stored,
		Refill: refill(c.maxP-stored, c.coolDown())}
}

// reserve is Guava's reserveEarliestAvailable: the request goes at the
// current nextFree and pushes it by its own cost, which the next request pays.
func (w *warmState) reserve(c *rateConfig, permits int, now int64) int64 {
	w.resync(c, now)
	at := w.next
	n := float64(permits)
	spend := min(n, w.stored) // like Java's Math.min, NaN wins
	fresh := n - spend
	wait := saturatedAdd(c.storedPermitsToWaitTime(w.stored, spend), javaLong(fresh*c.stable))
	w.next = saturatedAdd(at, wait)
	w.stored -= spend
	return at
}

// resync credits the idle time since nextFree as stored permits.
func (w *warmState) resync(c *rateConfig, now int64) {
	if now > w.next {
		w.stored = capStored(c.maxP, w.stored+float64(now-w.next)/c.coolDown())
		w.next = now
	}
}

// refund undoes permits of a reservation as far as is still possible: fresh
// permits first, and only while nothing is stored (a reservation takes
// fresh permits only once the stored ones are gone), then stored ones with
// their cost.
func (w *warmState) refund(l *Limiter, m int64, permits int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := l.rate.Load()
	w.resync(c, m)
	left := float64(permits)
	if w.stored == 0 && w.next > m && c.stable > 0 {
		fresh := min(left, float64(w.next-m)/c.stable)
		w.next = max(w.next-javaLong(fresh*c.stable), m)
		left -= fresh
	}
	if back := min(left, c.maxP-w.stored); back > 0 {
		cost := c.storedPermitsToWaitTime(w.stored+back, back)
		w.next = max(w.next-cost, m)
		w.stored += back
	}
}

// storedAt is the stored permits at m, after a resync on a copy.
func (w *warmState) storedAt(l *Limiter, m int64) float64 {
	w.mu.Lock()
	c, cp := l.rate.Load(), warmState{next: w.next, stored: w.stored}
	w.mu.Unlock()
	cp.resync(c, m)
	return storedOrMax(cp.stored, c.maxP)
}

// setRateNow is SetRate: Guava's setRate under the lock, at the clock's now.
func (w *warmState) setRateNow(l *Limiter, rate float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := l.rate.Load()
	cfg := *old
	w.setRate(&cfg, rate, l.micros(clock.Nanotime(old.clk)), old)
	l.rate.Store(&cfg)
}

// setRate is Guava's setRate and SmoothWarmingUp's doSetRate: resync under
// old, then fill cfg for the new rate and rescale the stored permits to it.
// old.maxP 0 marks the initial state (cold).
func (w *warmState) setRate(cfg *rateConfig, rate float64, now int64, old *rateConfig) {
	w.resync(old, now)
	cfg.stable = 1e6 / rate
	if cfg.warmup == 0 {
		// No warm-up: nothing is ever stored. Guava divides 0 by 0 here and
		// can end up with NaN stored permits, which would wait for nothing.
		cfg.threshold, cfg.maxP, cfg.slope, w.stored = 0, 0, 0, 0
		return
	}
	wu := float64(cfg.warmup)
	cold := cfg.stable * cfg.coldFactor
	cfg.threshold = 0.5 * wu / cfg.stable
	cfg.maxP = cfg.threshold + 2.0*wu/(cfg.stable+cold)
	cfg.slope = (cold - cfg.stable) / (cfg.maxP - cfg.threshold)
	switch {
	case old.maxP == math.Inf(1): // stored would be NaN below
		w.stored = 0
	case old.maxP == 0: // initial state: cold
		w.stored = cfg.maxP
	default:
		w.stored = w.stored * cfg.maxP / old.maxP
	}
}

// coolDown is the micros it takes an idle warming-up limiter to store one
// permit: warmupPeriod / maxPermits.
func (c *rateConfig) coolDown() float64 { return float64(c.warmup) / c.maxP }

// storedPermitsToWaitTime is the integral of the cost line over
// [stored-take, stored]: a trapezoid above thresholdPermits plus the stable
// interval below it.
func (c *rateConfig) storedPermitsToWaitTime(stored, take float64) int64 {
	var micros int64
	if above := stored - c.threshold; above > 0 {
		t := min(above, take)
		length := c.permitsToTime(above) + c.permitsToTime(above-t)
		micros = javaLong(t * length / 2.0)
		take -= t
	}
	return saturatedAdd(micros, javaLong(c.stable*take))
}

func (c *rateConfig) permitsToTime(p float64) float64 { return c.stable + p*c.slope }

// capStored is Guava's min(maxPermits, s), except that a limiter that can
// store nothing stores nothing even when s is NaN.
func capStored(maxP, s float64) float64 {
	if maxP == 0 {
		return 0
	}
	return min(maxP, s) // like Java's Math.min, NaN wins
}

// storedOrMax is the stored permits, or maxPermits when they are NaN (only
// after switching to +Inf, where everything is free).
func storedOrMax(stored, maxP float64) float64 {
	if math.IsNaN(stored) {
		return maxP
	}
	return stored
}
