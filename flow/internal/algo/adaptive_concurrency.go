package algo

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// adaptiveConcurrency is a concurrency cap that finds its own limit from the
// response times Exit measures, in the style of Netflix concurrency-limits'
// Gradient2Limit: a short-term RTT (the mean over a window of about limit
// samples) is compared with a long-term RTT (the service's no-queue
// latency), and after each window
//
//	gradient = clamp(tolerance × long / short, 0.5, 1)
//	next     = limit × gradient (+ √limit, the queue allowance, see below)
//	limit    = limit × (1 − smoothing) + next × smoothing, in [minLimit, maxLimit]
//
// Where this differs from Gradient2, and why (adaptive/simulate drives it
// against a service of fixed capacity):
//   - growth by √limit happens only while the limit is in use (a call was
//     refused in the window) and the queue at the service, estimated as
//     Vegas does (limit × (1 − long/short)), is under queueFloor of the
//     limit. Without this gate the limit grows until latency reaches
//     tolerance × long, well past the service's capacity, with a longer
//     tail and no more goodput. Vegas alone has no tolerance and grows by
//     log10(limit) a window: slower from initialLimit 20;
//   - the long-term RTT falls halfway to a lower window mean at once and
//     rises only slowly (time constant longRTTRise). Gradient2's long RTT
//     averages 600 samples and so follows a queue's latency up, and the
//     limit creeps with it; the slow rise still follows a service that
//     really got slower;
//   - in use means refused, not Gradient2's in-flight ≥ limit/2, which
//     priority reserves defeat (low calls alone fill half the limit).
//
// Hot path: Entry is one CAS (as concurrency); Exit adds a sample with two
// atomic adds. The Exit that completes a window closes it under a TryLock:
// no call ever waits for the update, and a sample landing between the two
// swaps is counted in the next window (a rounding, not a loss). The engine
// measures every call that holds this limit, whatever its response-time
// sampling (WithRTSampling), so a window spans windowSamples calls.
type adaptiveConcurrency struct {
	inFlight  atomic.Int64
	limit     atomic.Int64  // the current whole limit
	refusedBy atomic.Uint32 // bit p+1: a call of class p was refused since the window opened
	// dyn scales the Reserve share of the classes below critical (low,
	// normal, high), float64 bits in (0, 1]: halved after a window in which
	// a higher class was refused, raised by dynRise after one in which none
	// was. A fixed share cannot serve both a mix (30% critical needs 90%
	// of the slots once latency is shared) and low traffic alone (which
	// should fill the service): the dynamic part gives way to the higher
	// classes only while they are turned away.
	dyn     [numPriorities - 1]atomic.Uint64
	winSum  atomic.Int64 // sum of RTT samples (ns) in the open window
	winN    atomic.Int64 // samples in the open window
	shortNs atomic.Int64 // last window's mean RTT, for Snapshot
	longNs  atomic.Int64 // long-term RTT, for Snapshot

	cfg adaptiveConfig

	mu       sync.Mutex // held (TryLock) by the Exit closing a window
	est      float64    // the limit before rounding; under mu
	long     float64    // long-term RTT in ns; under mu
	lastTime int64      // when the last window closed; under mu
}

// adaptiveConfig is the part of an AdaptiveSpec update reads, as floats,
// kept apart so that a tracked key's limiter holds no more than it uses.
type adaptiveConfig struct {
	minLimit, maxLimit   float64
	tolerance, smoothing float64
}

// AdaptiveSpec is what adaptive_concurrency reads of its rule.
type AdaptiveSpec struct {
	InitialLimit, MinLimit, MaxLimit int     // the limit it starts at, and its bounds
	Tolerance                        float64 // how far the short RTT may rise over the long one before the limit falls
	Smoothing                        float64 // the weight, in (0, 1], of each new estimate
}

const (
	// longRTTRise is the time constant with which the long-term RTT follows
	// a short-term RTT above it: a service that got slower is followed in
	// minutes, while a queue at the limit raises the floor by well under
	// 1% a minute.
	longRTTRise = 10 * time.Minute
	// minWindowSamples is the fewest samples a window averages over.
	minWindowSamples = 10
	// longRTTFall is the weight of a lower window mean in the long RTT:
	// high enough to follow a faster service within a few windows, low
	// enough that the long RTT does not sink to the lowest noisy mean.
	longRTTFall = 0.5
	// queueFloor is the estimated queue, as a share of the limit, that
	// stops growth (see update).
	queueFloor = 0.1
)

var _ Limiter = (*adaptiveConcurrency)(nil)
var _ OwnLimit = (*adaptiveConcurrency)(nil)
var _ ClassLimiter = (*adaptiveConcurrency)(nil)
var _ RTTObserver = (*adaptiveConcurrency)(nil)

func newAdaptiveConcurrency(cfg AdaptiveSpec) *adaptiveConcurrency {
	a := &adaptiveConcurrency{cfg: adaptiveConfig{
		minLimit: float64(cfg.MinLimit), maxLimit: float64(cfg.MaxLimit),
		tolerance: cfg.Tolerance, smoothing: cfg.Smoothing,
	}}
	a.est = float64(cfg.InitialLimit)
	for i := range a.dyn {
		a.dyn[i].Store(math.Float64bits(1))
	}
	a.limit.Store(int64(cfg.InitialLimit))
	return a
}

func (a *adaptiveConcurrency) TryAcquire(now int64, n int, _ time.Duration) Decision {
	return a.TryAcquireClass(now, n, PriorityNormal, 1)
}

func (a *adaptiveConcurrency) TryAcquireClass(_ int64, n int, p Priority, share float64) Decision {
	limit := a.limit.Load()
	if p < PriorityCritical {
		share *= math.Float64frombits(a.dyn[p+1].Load())
	}
	d := acquireUpTo(&a.inFlight, int64(n), ClassCap(limit, share), limit)
	if !d.OK() {
		// Load first: no cache-line write per refusal once the bit is set.
		if bit := uint32(1) << (p + 1); a.refusedBy.Load()&bit == 0 {
			a.refusedBy.Or(bit)
		}
	}
	return d
}

// Limit is the limit the algorithm has set itself (OwnLimit).
func (a *adaptiveConcurrency) Limit() float64 { return float64(a.limit.Load()) }

func (a *adaptiveConcurrency) Refund(_ int64, n int) { a.Release(n) }

func (a *adaptiveConcurrency) Release(n int) { releaseFloor(&a.inFlight, n) }

// SetLimit is a no-op: the algorithm owns its limit (the CPU factor does not
// apply to adaptive_concurrency rules).
func (a *adaptiveConcurrency) SetLimit(int64, float64) {}

func (a *adaptiveConcurrency) Remaining(int64) float64 {
	return float64(max(a.limit.Load()-a.inFlight.Load(), 0))
}

// Observe adds one RTT sample; the Exit that fills the window updates the
// limit.
func (a *adaptiveConcurrency) Observe(at, rtt int64) {
	a.winSum.Add(max(rtt, 0))
	if a.winN.Add(1) < windowSamples(a.limit.Load()) || !a.mu.TryLock() {
		return
	}
	defer a.mu.Unlock()
	n := a.winN.Swap(0)
	sum := a.winSum.Swap(0)
	if n < minWindowSamples { // another Exit closed it just before us
		a.winN.Add(n)
		a.winSum.Add(sum)
		return
	}
	refused := a.refusedBy.Swap(0)
	a.moveShares(refused)
	inUse := refused != 0
	dt := at - a.lastTime
	if a.lastTime == 0 {
		dt = 0
	}
	a.lastTime = at
	a.update(float64(sum)/float64(n), inUse, time.Duration(dt))
}

// dynRise is how much a class's dynamic share grows after a window in
// which no higher class was refused (from the floor back to 1 in about 20
// windows); dynFloor is the least it falls to.
const (
	dynRise  = 0.05
	dynFloor = 0.01
)

// moveShares updates the dynamic shares after a window in which the classes
// whose bits are set in refused were turned away.
func (a *adaptiveConcurrency) moveShares(refused uint32) {
	for i := range a.dyn { // i = p+1 for low, normal, high
		f := math.Float64frombits(a.dyn[i].Load())
		if refused>>(i+1) != 0 {
			f = max(f/2, dynFloor)
		} else {
			f = min(f+dynRise, 1)
		}
		a.dyn[i].Store(math.Float64bits(f))
	}
}

// windowSamples is how many samples a window averages over: about one
// round trip of completions at the limit, at least minWindowSamples.
func windowSamples(limit int64) int64 { return max(minWindowSamples, limit) }

// update moves the limit after a window whose mean RTT was short (ns);
// inUse says a call was refused during it; dt is the time since the last
// window closed. Called under mu.
func (a *adaptiveConcurrency) update(short float64, inUse bool, dt time.Duration) {
	if short <= 0 {
		short = 1 // a zero-latency window (a fake clock not advanced)
	}
	switch {
	case a.long == 0:
		a.long = short
	case short < a.long:
		a.long += (short - a.long) * longRTTFall
	default:
		a.long += (short - a.long) * (1 - math.Exp(-float64(dt)/float64(longRTTRise)))
	}
	c := &a.cfg
	gradient := min(max(c.tolerance*a.long/short, 0.5), 1)
	next := a.est * gradient
	// Grow by the queue allowance only while the limit is in use (someone
	// was turned away: otherwise the window says nothing about a higher
	// limit) and the calls queued at the service, estimated as Vegas does
	// from the limit (in use, so reached) and the RTT ratio, are under
	// queueFloor of it: growth stops near the knee instead of at tolerance
	// × the no-queue RTT. Not zero: window means are noisy and the long
	// RTT sits below their mean, which reads as a queue of a few percent
	// when there is none.
	if queued := a.est * (1 - a.long/short); inUse && queued < queueFloor*a.est {
		next += math.Sqrt(a.est)
	}
	a.est = min(max(a.est*(1-c.smoothing)+next*c.smoothing, c.minLimit), c.maxLimit)
	a.limit.Store(int64(a.est))
	a.shortNs.Store(int64(short))
	a.longNs.Store(int64(a.long))
}

// AdaptiveStats is the state of an adaptive_concurrency limiter; the
// engine's public AdaptiveStats has the same fields.
type AdaptiveStats struct {
	Limit    int64         // the current concurrency limit
	InFlight int64         // calls holding a permit now
	ShortRTT time.Duration // mean response time of the last window (0 before the first)
	LongRTT  time.Duration // the long-term (no-queue) response time estimate
}

// AdaptiveReporter is a limiter that reports AdaptiveStats.
type AdaptiveReporter interface {
	AdaptiveStats() AdaptiveStats
}

var _ AdaptiveReporter = (*adaptiveConcurrency)(nil)

// AdaptiveStats reads the limit, the calls in flight and the RTTs now.
func (a *adaptiveConcurrency) AdaptiveStats() AdaptiveStats {
	return AdaptiveStats{Limit: a.limit.Load(), InFlight: a.inFlight.Load(),
		ShortRTT: time.Duration(a.shortNs.Load()), LongRTT: time.Duration(a.longNs.Load())}
}
