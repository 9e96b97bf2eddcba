package flow

import (
	"sync/atomic"
	"time"
)

// histBounds are the shared histogram bounds, in seconds (Prometheus'
// default buckets, extended down to 100µs for fast calls and waits).
var histBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// histBoundsNs are histBounds in nanoseconds, for the hot path.
var histBoundsNs = func() [len16]int64 {
	var b [len16]int64
	for i, s := range histBounds {
		b[i] = int64(s * 1e9)
	}
	return b
}()

const len16 = 16

type histogram [len16 + 1]atomic.Uint64

func (h *histogram) observe(d int64) {
	i := 0
	for i < len16 && d > histBoundsNs[i] {
		i++
	}
	h[i].Add(1)
}

func (h *histogram) read() (Histogram, uint64) {
	out := Histogram{Bounds: histBounds, Counts: make([]uint64, len16+1)}
	var total uint64
	for i := range h {
		out.Counts[i] = h[i].Load()
		total += out.Counts[i]
	}
	return out, total
}

// statBucket is one slice of the recent window. epoch is the bucket's index
// in time (now / bucket length); a writer that finds an old epoch claims the
// bucket with a CAS and clears it. A write racing that clear can be lost:
// the recent window is approximate at bucket turnover, lifetime totals are
// exact.
type statBucket struct {
	epoch                              atomic.Int64
	passed, blocked, completed, errors atomic.Uint64
	rtSum                              atomic.Int64
	minRT, maxRT                       atomic.Int64 // minRT holds rt+1 so 0 means none
	_                                  [8]byte      // 64-byte buckets: one cache line each
}

// resourceStats are one resource's counters. Every field is updated with
// atomics only: Entry and Exit never lock, Snapshot never blocks them.
type resourceStats struct {
	name     string
	passed   atomic.Uint64 // in flight = passed - completed: no counter of its own
	waited   atomic.Uint64
	blocked  [NumLevels]atomic.Uint64
	errors   atomic.Uint64
	rtSum    atomic.Int64
	waitSum  atomic.Int64
	rtHist   histogram // its total is the Completed count
	waitHist histogram
	ring     []statBucket
	bucketNs int64
}

func newResourceStats(name string, window time.Duration, buckets int) *resourceStats {
	bn := int64(window) / int64(buckets)
	if bn < 1 {
		bn = 1
	}
	s := &resourceStats{name: name, ring: make([]statBucket, buckets), bucketNs: bn}
	for i := range s.ring {
		s.ring[i].epoch.Store(-1 << 62) // no bucket is current before its first use
	}
	return s
}

// inFlight is passed - completed, completed read first (see read).
func (s *resourceStats) inFlight() int64 {
	var c uint64
	for i := range s.rtHist {
		c += s.rtHist[i].Load()
	}
	return int64(s.passed.Load() - c)
}

func (s *resourceStats) bucket(now int64) *statBucket {
	idx := now / s.bucketNs
	if now < 0 {
		idx-- // floor division, so buckets do not straddle 0
	}
	b := &s.ring[uint64(idx)%uint64(len(s.ring))]
	if e := b.epoch.Load(); e != idx && e < idx && b.epoch.CompareAndSwap(e, idx) {
		// We own the turnover: clear what the bucket counted a full ring ago.
		b.passed.Store(0)
		b.blocked.Store(0)
		b.completed.Store(0)
		b.errors.Store(0)
		b.rtSum.Store(0)
		b.minRT.Store(0)
		b.maxRT.Store(0)
	}
	return b
}

func (s *resourceStats) pass(now int64, waited time.Duration) {
	s.passed.Add(1)
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
	if rt < 0 {
		rt = 0 // a clock set backwards
	}
	s.rtSum.Add(rt)
	s.rtHist.observe(rt)
	b := s.bucket(now)
	b.completed.Add(1)
	b.rtSum.Add(rt)
	if failed {
		s.errors.Add(1)
		b.errors.Add(1)
	}
	for { // keep the smallest; each CAS case either loses to a smaller value or installs ours
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

func (s *resourceStats) read(now int64) ResourceStats {
	// Completed is read before Passed: a call counts in passed before it can
	// complete, so InFlight never reads negative.
	rtHist, completed := s.rtHist.read()
	out := ResourceStats{
		Resource:  s.name,
		RTHist:    rtHist,
		Completed: completed,
		Passed:    s.passed.Load(),
		Waited:    s.waited.Load(),
		Errors:    s.errors.Load(),
		RTSum:     time.Duration(s.rtSum.Load()),
		WaitSum:   time.Duration(s.waitSum.Load()),
	}
	for i := range s.blocked {
		out.Blocked[i] = s.blocked[i].Load()
	}
	out.InFlight = int64(out.Passed - out.Completed)
	out.WaitHist, _ = s.waitHist.read()
	cur := now / s.bucketNs
	if now < 0 {
		cur--
	}
	n := int64(len(s.ring))
	w := WindowStats{Span: time.Duration(s.bucketNs * n)}
	haveMin := false
	for i := range s.ring {
		b := &s.ring[i]
		if e := b.epoch.Load(); e > cur || e <= cur-n {
			continue
		}
		w.Passed += b.passed.Load()
		w.Blocked += b.blocked.Load()
		w.Completed += b.completed.Load()
		w.Errors += b.errors.Load()
		w.RTSum += time.Duration(b.rtSum.Load())
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
