package algo

import (
	"math"
	"sync"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// sentinelWarmUp is SentinelWarmUp: Alibaba Sentinel's warm-up
// (WarmUpController in Java, the WarmUp token calculator in
// sentinel-golang v1.0.4, core/flow/tc_warm_up.go), kept so that warm-up
// rules imported from Sentinel decide call for call as they did there. It
// is not Guava's SmoothWarmingUp (WarmUp): Sentinel computes a QPS
// threshold from a token count, and a separate checker admits against it.
//
// The threshold. With count = Limit per second, P = Warmup in seconds and
// c = ColdFactor, warning = ⌊P·count/(c-1)⌋, max = warning + ⌊2·P·count/(1+c)⌋
// and slope = (c-1)/count/(max-warning). Once per second of Unix time (at
// the first call of the second) the stored tokens are synced: below
// warning they grow by count per elapsed second; above it they grow only
// while the previous second's passes were below ⌊count⌋/c (integer
// division, as in Sentinel); then they drop by those passes, not below 0,
// and never exceed max. The stored count starts at 0 with its last sync at
// the epoch, so the first sync fills it to max: a rule starts cold. The
// threshold is count below warning, else nextUp(1/((stored-warning)·slope +
// 1/count)).
//
// The checker. With maxWait 0 (Sentinel's reject behaviour), a call passes
// when the passes in the current and the previous 500 ms bucket (aligned
// to the Unix epoch, as sentinel_window counts) plus its permits do not
// exceed the threshold. With maxWait > 0 (Sentinel's throttling, Java's
// warm-up + rate limiter) calls are spaced ⌈n/threshold⌉ seconds apart on
// a virtual queue, and one whose slot is more than maxWait away is refused.
// The "previous second's passes" are the two buckets before the current
// one, as sentinel-golang reads them; a queued call counts where it was
// decided (sentinel-golang counts it after its sleep).
//
// One deliberate difference: when max = warning (P·count too small for a
// single warm-up token), sentinel-golang's slope is infinite and its
// threshold NaN, which admits every call; here the threshold stays count.
//
// Only Window 1s is valid: Sentinel syncs per second and reads count per
// second. A mutex guards the state: the decision reads and writes several
// fields that must move together.
type sentinelWarmUp struct {
	mu sync.Mutex
	warmState
}

// warmState is sentinelWarmUp's state without its lock, so that Remaining
// can work on a copy.
type warmState struct {
	offset  int64 // ns to add to the engine's Nanotime for Unix time
	warm    time.Duration
	cold    uint32
	count   float64 // threshold per second at full rate
	warning int64
	maxTok  int64
	slope   float64
	stored  int64
	filled  int64    // Unix ms of the last sync, a whole second; 0 before the first
	idx     int64    // current 500 ms bucket: floor(Unix ms / 500)
	passes  [3]int64 // passes in buckets idx, idx-1, idx-2
	last    int64    // throttling: Unix ns of the latest admitted slot; 0 before the first
}

var _ Limiter = (*sentinelWarmUp)(nil)

// sentinelBucketMs is the bucket length of Sentinel's default 1 s statistic.
const sentinelBucketMs = 500

func newSentinelWarmUp(s *Spec, limit float64, clk clock.Clock, now int64) *sentinelWarmUp {
	w := &sentinelWarmUp{warmState: warmState{cold: uint32(s.ColdFactor), warm: s.Warmup}}
	w.offset = clk.Now().UnixNano() - now
	w.idx = floorDiv(w.unixMs(now), sentinelBucketMs)
	w.period(s.Warmup, limit)
	return w
}

// period sets count and the token marks derived from it, as Sentinel's
// constructor does (the uint64 truncations included); mu held or unshared.
func (w *warmState) period(warmup time.Duration, count float64) {
	p := warmup.Seconds()
	c := float64(w.cold)
	w.count = count
	w.warning = tokens(p * count / (c - 1))
	w.maxTok = w.warning + tokens(2*p*count/(1+c))
	w.slope = (c - 1) / count / float64(w.maxTok-w.warning)
}

// tokens truncates as Sentinel's uint64 conversion does, bounded so that a
// huge warm-up cannot overflow (Go's conversion does not saturate).
func tokens(f float64) int64 { return int64(min(f, 1<<60)) }

func (w *warmState) unixMs(now int64) int64 {
	return floorDiv(now+w.offset, int64(time.Millisecond))
}

// roll moves the pass buckets to the one of ms; mu held. A clock that
// goes backwards keeps the current bucket.
func (w *warmState) roll(ms int64) {
	i := floorDiv(ms, sentinelBucketMs)
	switch d := i - w.idx; {
	case d <= 0:
	case d == 1:
		w.passes = [3]int64{0, w.passes[0], w.passes[1]}
	case d == 2:
		w.passes = [3]int64{0, 0, w.passes[0]}
	default:
		w.passes = [3]int64{}
	}
	w.idx = max(w.idx, i)
}

// sync is Sentinel's syncToken: at most once per whole second, cool the
// stored tokens down and take off the previous second's passes; mu held.
func (w *warmState) sync(ms int64) {
	sec := ms - floorMod(ms, 1000)
	if sec <= w.filled {
		return
	}
	prevQPS := w.passes[1] + w.passes[2]
	v := w.stored
	grow := float64(sec-w.filled) * w.count / 1000
	switch {
	case v < w.warning:
		v = int64(float64(v) + grow)
	case v > w.warning && float64(prevQPS) < float64(uint32(min(w.count, math.MaxUint32))/w.cold):
		v = int64(float64(v) + grow)
	}
	v = min(v, w.maxTok) - prevQPS
	w.stored = max(v, 0)
	w.filled = sec
}

// threshold is the QPS admitted now; mu held, after sync.
func (w *warmState) threshold() float64 {
	if w.stored < w.warning || w.maxTok <= w.warning {
		return w.count
	}
	above := float64(w.stored - w.warning)
	return math.Nextafter(1/(above*w.slope+1/w.count), math.MaxFloat64)
}

func (w *sentinelWarmUp) TryAcquire(now int64, n int, maxWait time.Duration) Decision {
	w.mu.Lock()
	defer w.mu.Unlock()
	ms := w.unixMs(now)
	w.roll(ms)
	w.sync(ms)
	qps := w.threshold()
	k := int64(n)
	if float64(k) > w.count {
		return Decision{Verdict: Never} // the threshold never exceeds count
	}
	if maxWait > 0 {
		return w.queue(now, k, qps, maxWait)
	}
	reset := w.untilEdge(now, 2)
	if used := w.passes[0] + w.passes[1]; float64(used+k) <= qps {
		w.passes[0] += k
		return Decision{Verdict: Granted, Remaining: math.Max(0, math.Floor(qps)-float64(used+k)), Reset: reset}
	}
	// The earliest the count can drop: the previous bucket leaves at the
	// next edge, the current one at the edge after.
	retry := w.untilEdge(now, 1)
	if float64(w.passes[0]+k) > qps {
		retry = reset
	}
	return Decision{Verdict: Refused, Wait: retry, Reset: reset}
}

// queue is Sentinel's ThrottlingChecker at threshold qps; mu held.
func (w *warmState) queue(now, k int64, qps float64, maxWait time.Duration) Decision {
	if float64(k) > qps {
		// More permits than the threshold now: Sentinel refuses it; it may
		// pass once the rule is warmer, which happens at a second's sync.
		return Decision{Verdict: Refused, Wait: w.untilSecond(now)}
	}
	cur := now + w.offset
	interval := int64(math.Ceil(float64(k) / qps * float64(time.Second)))
	if w.last+interval <= cur {
		w.last = cur
		w.passes[0] += k
		return Decision{Verdict: Granted}
	}
	wait := w.last + interval - cur
	if wait > int64(maxWait) {
		return Decision{Verdict: Refused, Wait: time.Duration(wait - int64(maxWait))}
	}
	w.last += interval
	w.passes[0] += k
	return Decision{Verdict: Granted, Wait: time.Duration(wait)}
}

// untilEdge is the time from now to the end of bucket idx+k-1.
func (w *warmState) untilEdge(now int64, k int64) time.Duration {
	end := (w.idx+k)*sentinelBucketMs*int64(time.Millisecond) - w.offset
	return nonNeg(end - now)
}

// untilSecond is the time from now to the next whole second of Unix time.
func (w *warmState) untilSecond(now int64) time.Duration {
	return time.Duration(int64(time.Second) - floorMod(now+w.offset, int64(time.Second)))
}

// Refund gives permits back to the current bucket when at lies in it. A
// queued slot is kept: the queue cannot tell whose slot is whose.
func (w *sentinelWarmUp) Refund(at int64, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if floorDiv(w.unixMs(at), sentinelBucketMs) == w.idx {
		w.passes[0] = max(w.passes[0]-int64(n), 0)
	}
}

// SetLimit recomputes the token marks for the new count; the stored tokens
// and the counts stay.
func (w *sentinelWarmUp) SetLimit(_ int64, limit float64) {
	w.mu.Lock()
	w.period(w.warm, limit)
	w.mu.Unlock()
}

// Remaining works on a copy: a sync it ran would read the buckets before
// the first call of the second does.
func (w *sentinelWarmUp) Remaining(now int64) float64 {
	w.mu.Lock()
	s := w.warmState
	w.mu.Unlock()
	ms := s.unixMs(now)
	s.roll(ms)
	s.sync(ms)
	return math.Max(0, math.Floor(s.threshold())-float64(s.passes[0]+s.passes[1]))
}
