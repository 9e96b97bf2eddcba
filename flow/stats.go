package flow

import (
	"runtime"
	"sync/atomic"
	"time"
)

// histBounds are the shared histogram bounds, in seconds (Prometheus'
// default buckets, extended down to 100µs for fast calls and waits).
var histBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

const numBounds = 16

// histBoundsNs are histBounds in nanoseconds, for the hot path.
var histBoundsNs = func() [numBounds]int64 {
	var b [numBounds]int64
	for i, s := range histBounds {
		b[i] = int64(s * 1e9)
	}
	return b
}()

type histogram [numBounds + 1]atomic.Uint64

func (h *histogram) observe(d int64) {
	i := 0
	for i < numBounds && d > histBoundsNs[i] {
		i++
	}
	h[i].Add(1)
}

// statBucket is one slice of the recent window. epoch is the bucket's index
// in time (now / bucket length). The hot path touches only the current
// bucket: a pass is one atomic add, an exit two (plus errors on failure).
//
// Lifetime totals of passed, rtSum and rtHist are not counted a second time
// per call: a writer that finds an old epoch claims the bucket with a CAS
// and folds those counters into the resource's lifetime totals (an atomic
// swap to 0 each, so no increment is lost: it lands before the swap and is
// folded, or after it and is folded later). The recent-only counters are
// simply cleared; an increment racing that clear can be lost, so the recent
// window is approximate at bucket turnover while lifetime totals are exact.
type statBucket struct {
	epoch                   atomic.Int64
	passed, blocked, errors atomic.Uint64
	rtSum                   atomic.Int64
	minRT, maxRT            atomic.Int64 // minRT holds rt+1 so 0 means none
	rtHist                  histogram
}

// resourceStats are one resource's counters, updated with atomics only:
// Entry and Exit never lock, Snapshot never blocks them.
type resourceStats struct {
	name     string
	ring     []statBucket
	bucketNs int64

	// Folded lifetime totals; the live part sits in the ring.
	passed atomic.Uint64
	rtSum  atomic.Int64
	rtHist histogram
	// folding counts folds in progress, folds counts folds done: a reader
	// retries while one runs or if one ran meanwhile, so it never sees a
	// count both swapped out of a bucket and not yet folded (which would
	// make a monotonic counter step back).
	folding, folds atomic.Int64

	// Rare events: counted directly.
	waited   atomic.Uint64
	waitSum  atomic.Int64
	waitHist histogram
	blocked  [NumLevels]atomic.Uint64
	errors   atomic.Uint64
}

func newResourceStats(name string, window time.Duration, buckets int) *resourceStats {
	bn := max(int64(window)/int64(buckets), 1)
	s := &resourceStats{name: name, ring: make([]statBucket, buckets), bucketNs: bn}
	for i := range s.ring {
		s.ring[i].epoch.Store(-1 << 62) // no bucket is current before its first use
	}
	return s
}

func (s *resourceStats) epochOf(now int64) int64 {
	idx := now / s.bucketNs
	if now < 0 && now%s.bucketNs != 0 {
		idx-- // floor division, so buckets do not straddle 0
	}
	return idx
}

func (s *resourceStats) bucket(now int64) *statBucket {
	idx := s.epochOf(now)
	b := &s.ring[uint64(idx)%uint64(len(s.ring))]
	if e := b.epoch.Load(); e < idx && b.epoch.CompareAndSwap(e, idx) {
		s.turnOver(b)
	}
	return b
}

// turnOver folds a bucket claimed for a new epoch; see statBucket.
func (s *resourceStats) turnOver(b *statBucket) {
	s.folding.Add(1)
	s.passed.Add(b.passed.Swap(0))
	s.rtSum.Add(b.rtSum.Swap(0))
	for i := range b.rtHist {
		s.rtHist[i].Add(b.rtHist[i].Swap(0))
	}
	s.folds.Add(1)
	s.folding.Add(-1)
	b.blocked.Store(0)
	b.errors.Store(0)
	b.minRT.Store(0)
	b.maxRT.Store(0)
}

func (s *resourceStats) pass(now int64, waited time.Duration) {
	if waited > 0 {
		s.waited.Add(1)
		s.waitSum.Add(int64(waited))
		s.waitHist.observe(int64(waited))
	}
	s.bucket(now).passed.Add(1)
}

func (s *resourceStats) block(now int64, l Level) {
	s.blocked[l].Add(1)
	s.bucket(now).blocked.Add(1)
}

func (s *resourceStats) exit(now int64, rt int64, failed bool) {
	rt = max(rt, 0) // a clock set backwards
	b := s.bucket(now)
	b.rtSum.Add(rt)
	b.rtHist.observe(rt)
	if failed {
		s.errors.Add(1)
		b.errors.Add(1)
	}
	for { // keep the smallest: stop when ours is not smaller, or once installed
		m := b.minRT.Load()
		if (m != 0 && m <= rt+1) || b.minRT.CompareAndSwap(m, rt+1) {
			break
		}
	}
	for {
		m := b.maxRT.Load()
		if m >= rt || b.maxRT.CompareAndSwap(m, rt) {
			break
		}
	}
}

// lifetime reads the folded totals plus what the ring still holds.
// Completed (the histogram) is read before passed: a call counts as passed
// before it can complete, so passed - completed (in flight) is never negative.
func (s *resourceStats) lifetime() (passed uint64, rtSum int64, hist [numBounds + 1]uint64) {
	for spins := 0; ; spins++ {
		f := s.folds.Load()
		if s.folding.Load() != 0 {
			runtime.Gosched()
			continue
		}
		hist = [numBounds + 1]uint64{}
		for i := range hist {
			hist[i] = s.rtHist[i].Load()
			for j := range s.ring {
				hist[i] += s.ring[j].rtHist[i].Load()
			}
		}
		rtSum, passed = s.rtSum.Load(), s.passed.Load()
		for j := range s.ring {
			rtSum += s.ring[j].rtSum.Load()
			passed += s.ring[j].passed.Load()
		}
		if s.folding.Load() == 0 && s.folds.Load() == f {
			return passed, rtSum, hist
		}
	}
}

// inFlight is passed - completed.
func (s *resourceStats) inFlight() int64 {
	passed, _, hist := s.lifetime()
	for _, c := range hist {
		passed -= c
	}
	return int64(passed)
}

func (s *resourceStats) read(now int64) ResourceStats {
	passed, rtSum, hist := s.lifetime()
	out := ResourceStats{
		Resource: s.name,
		Passed:   passed,
		RTSum:    time.Duration(rtSum),
		RTHist:   Histogram{Bounds: histBounds, Counts: hist[:]},
		Waited:   s.waited.Load(),
		WaitSum:  time.Duration(s.waitSum.Load()),
		WaitHist: Histogram{Bounds: histBounds, Counts: make([]uint64, numBounds+1)},
		Errors:   s.errors.Load(),
	}
	for _, c := range hist {
		out.Completed += c
	}
	out.InFlight = int64(out.Passed - out.Completed)
	for i := range s.waitHist {
		out.WaitHist.Counts[i] = s.waitHist[i].Load()
	}
	for i := range s.blocked {
		out.Blocked[i] = s.blocked[i].Load()
	}
	cur, n := s.epochOf(now), int64(len(s.ring))
	w := WindowStats{Span: time.Duration(s.bucketNs * n)}
	haveMin := false
	for i := range s.ring {
		b := &s.ring[i]
		if e := b.epoch.Load(); e > cur || e <= cur-n {
			continue
		}
		w.Passed += b.passed.Load()
		w.Blocked += b.blocked.Load()
		w.Errors += b.errors.Load()
		w.RTSum += time.Duration(b.rtSum.Load())
		for j := range b.rtHist {
			w.Completed += b.rtHist[j].Load()
		}
		if m := time.Duration(b.minRT.Load()); m != 0 && (!haveMin || m-1 < w.MinRT) {
			w.MinRT, haveMin = m-1, true
		}
		if m := time.Duration(b.maxRT.Load()); m > w.MaxRT {
			w.MaxRT = m
		}
	}
	out.Recent = w
	return out
}
