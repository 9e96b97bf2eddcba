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

func (h *histogram) observe(d int64, w uint64) {
	i := 0
	for i < numBounds && d > histBoundsNs[i] {
		i++
	}
	h[i].Add(w)
}

// statBucket is one slice of the recent window. epoch is the bucket's index
// in time (now / bucket length). Passes and completions, the counts every
// call writes, live in lane buckets instead (see laneBucket); a statBucket
// takes refusals, errors and measured response times.
//
// Lifetime totals of the folded counters (here blocked, rtSum and rtHist;
// passed and completed in lane buckets) are not counted a second time per
// call: a writer that finds an old epoch claims the bucket with a CAS and
// folds those counters into the resource's lifetime totals (an atomic swap
// to 0 each, so no increment is lost: it lands before the swap and is
// folded, or after it and is folded later). The recent-only counters are
// simply cleared; an increment racing that clear can be lost, so the recent
// window is approximate at bucket turnover while lifetime totals are exact.
type statBucket struct {
	epoch        atomic.Int64
	errors       atomic.Uint64
	blocked      [NumLevels]atomic.Uint64
	rtSum        atomic.Int64
	minRT, maxRT atomic.Int64 // minRT holds rt+1 so 0 means none
	rtHist       histogram
}

// laneBucket counts the passes and completions of one bucket's epoch in
// one lane. A resource keeps a ring of them per lane, and a call counts in
// the lane of its Permit (see Permit.lane): permits are pooled per P, so
// calls on different cores mostly write different cache lines. With one
// shared counter, its line moved between cores twice per call (Entry and
// Exit) and cost more than the rest of a parallel pass. Turnover and
// folding are a statBucket's.
type laneBucket struct {
	epoch             atomic.Int64
	passed, completed atomic.Uint64
}

// lanePad laneBuckets (72 B) around each lane's ring keep two lanes, and
// the first and last lane and their neighbours in memory, off a shared
// 64-byte line whatever the alignment.
const lanePad = 3

// maxLanes bounds the lanes of a resource: (buckets+3)*24 B each.
const maxLanes = 16

// resourceStats are one resource's counters, updated with atomics only:
// Entry and Exit never lock, Snapshot never blocks them.
type resourceStats struct {
	name     string
	ring     []statBucket
	bucketNs int64
	recent   atomic.Pointer[statBucket] // the ring bucket last found (see bucket)
	// lanes holds one ring of laneBuckets per lane, lane l's bucket i at
	// lanePad + l*stride + i (see lanePad); laneMask is lanes-1.
	lanes            []laneBucket
	stride, laneMask uint64

	// Folded lifetime totals; the live part sits in the ring.
	passed    atomic.Uint64
	completed atomic.Uint64
	blocked   [NumLevels]atomic.Uint64
	rtSum     atomic.Int64
	rtHist    histogram
	// folding counts folds in progress, folds counts folds done: a reader
	// retries while one runs or if one ran meanwhile, so it never sees a
	// count both swapped out of a bucket and not yet folded (which would
	// make a monotonic counter step back).
	folding, folds atomic.Int64

	// Rare events: counted directly.
	waited   atomic.Uint64
	waitSum  atomic.Int64
	waitHist histogram
	errors   atomic.Uint64
	// listRefused counts the refusals by allow (0) and deny (1) rules.
	listRefused [NumLevels][2]atomic.Uint64
}

func newResourceStats(name string, window time.Duration, buckets int) *resourceStats {
	bn := max(int64(window)/int64(buckets), 1)
	nl := laneCount(runtime.GOMAXPROCS(0))
	stride := buckets + lanePad
	s := &resourceStats{name: name, ring: make([]statBucket, buckets), bucketNs: bn,
		lanes: make([]laneBucket, lanePad+nl*stride), stride: uint64(stride), laneMask: uint64(nl - 1)}
	// No bucket is current before its first use (pads included: they stay
	// empty, and are summed with the rest).
	for i := range s.ring {
		s.ring[i].epoch.Store(-1 << 62)
	}
	for i := range s.lanes {
		s.lanes[i].epoch.Store(-1 << 62)
	}
	return s
}

// laneCount is how many lanes a resource keeps for procs Ps: a power of
// two at least twice procs (records are numbered in sequence, so records
// on different Ps mostly count apart), at most maxLanes.
func laneCount(procs int) int {
	n := 1
	for n < 2*procs && n < maxLanes {
		n *= 2
	}
	return n
}

func (s *resourceStats) epochOf(now int64) int64 {
	idx := now / s.bucketNs
	if now < 0 && now%s.bucketNs != 0 {
		idx-- // floor division, so buckets do not straddle 0
	}
	return idx
}

// bucket is the ring's bucket for now, claimed for now's epoch as bucketAt
// does. recent, the bucket a caller last found there, is tried first:
// while now is in its epoch it is that bucket (an epoch's slot holds that
// epoch), found without the two divisions of bucketAt(epochOf(now)).
func (s *resourceStats) bucket(now int64) *statBucket {
	if b := s.recent.Load(); b != nil && s.inEpoch(b.epoch.Load(), now) {
		return b
	}
	b := s.bucketAt(s.epochOf(now))
	s.recent.Store(b)
	return b
}

func (s *resourceStats) bucketAt(idx int64) *statBucket {
	b := &s.ring[uint64(idx)%uint64(len(s.ring))]
	if e := b.epoch.Load(); e < idx && b.epoch.CompareAndSwap(e, idx) {
		s.turnOver(b)
	}
	return b
}

// laneBucket is lane's bucket at now, claimed for now's epoch as bucket does.
func (s *resourceStats) laneBucket(now int64, lane uint32) *laneBucket {
	return s.laneBucketAt(s.epochOf(now), lane)
}

// laneBucketAt is lane's bucket for epoch idx (see laneBucket).
func (s *resourceStats) laneBucketAt(idx int64, lane uint32) *laneBucket {
	b := &s.lanes[lanePad+(uint64(lane)&s.laneMask)*s.stride+uint64(idx)%uint64(len(s.ring))]
	if e := b.epoch.Load(); e < idx && b.epoch.CompareAndSwap(e, idx) {
		s.folding.Add(1)
		s.passed.Add(b.passed.Swap(0))
		s.completed.Add(b.completed.Swap(0))
		s.folds.Add(1)
		s.folding.Add(-1)
	}
	return b
}

// turnOver folds a bucket claimed for a new epoch; see statBucket.
func (s *resourceStats) turnOver(b *statBucket) {
	s.folding.Add(1)
	for l := range b.blocked {
		s.blocked[l].Add(b.blocked[l].Swap(0))
	}
	s.rtSum.Add(b.rtSum.Swap(0))
	for i := range b.rtHist {
		s.rtHist[i].Add(b.rtHist[i].Swap(0))
	}
	s.folds.Add(1)
	s.folding.Add(-1)
	b.errors.Store(0)
	b.minRT.Store(0)
	b.maxRT.Store(0)
}

// pass counts an admitted call in lane and returns the bucket it counted
// in, where its Exit counts it complete when it does not read the clock.
// last is the bucket the caller's record counted its previous call in, when
// that was in s (else nil): a record keeps its lane, so while now is in
// last's epoch, last is the bucket, found without laneBucketAt's checks.
func (s *resourceStats) pass(now int64, waited time.Duration, lane uint32, last *laneBucket) *laneBucket {
	if waited > 0 {
		s.waited.Add(1)
		s.waitSum.Add(int64(waited))
		s.waitHist.observe(int64(waited), 1)
	}
	if last == nil || !s.during(last, now) {
		last = s.laneBucket(now, lane)
	}
	last.passed.Add(1)
	return last
}

// during reports whether now is in b's epoch (see inEpoch). b is a bucket
// laneBucketAt returned.
func (s *resourceStats) during(b *laneBucket, now int64) bool {
	return s.inEpoch(b.epoch.Load(), now)
}

// inEpoch reports whether epochOf(now) == epoch without a division:
// epoch*bucketNs <= now < that+bucketNs. epoch is that of a bucket
// bucketAt or laneBucketAt returned, so one that some now fell in (never
// the sentinel of a bucket not yet used), and the product does not
// overflow.
func (s *resourceStats) inEpoch(epoch, now int64) bool {
	start := epoch * s.bucketNs
	return now >= start && now-start < s.bucketNs
}

func (s *resourceStats) block(now int64, l Level) {
	s.bucket(now).blocked[l].Add(1)
}

// listRefusal counts a refusal by an allow or deny rule at level l (it is
// also counted by block).
func (s *resourceStats) listRefusal(l Level, deny bool) {
	i := 0
	if deny {
		i = 1
	}
	s.listRefused[l][i].Add(1)
}

// exitUnmeasured counts a completed call whose response time was not
// measured, in the bucket its Entry counted in (b): no clock read. When that
// bucket has turned over since, the call counts in the newer epoch, which
// is still exact for lifetime totals (see statBucket).
func (s *resourceStats) exitUnmeasured(b *laneBucket, failed bool) {
	b.completed.Add(1)
	if failed {
		s.failed(b.epoch.Load())
	}
}

// failed counts an error in epoch (a call out of line: exitUnmeasured
// stays small enough to inline into Exit).
//
//go:noinline
func (s *resourceStats) failed(epoch int64) {
	s.errors.Add(1)
	s.bucketAt(epoch).errors.Add(1)
}

// exit counts a completed call at now in lane with its response time rt,
// which stands for w calls' (the sampling weight, see WithRTSampling).
// entered is the lane bucket its Entry counted it in: while now is in its
// epoch the completion counts there, found without a division.
func (s *resourceStats) exit(now int64, rt int64, w uint64, failed bool, lane uint32, entered *laneBucket) {
	rt = max(rt, 0) // a clock set backwards
	if entered == nil || !s.during(entered, now) {
		entered = s.laneBucket(now, lane)
	}
	entered.completed.Add(1)
	b := s.bucket(now)
	b.rtSum.Add(rt * int64(w))
	b.rtHist.observe(rt, w)
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
// Completed is read before passed: a call counts as passed before it can
// complete, so passed - completed (in flight) is never negative.
func (s *resourceStats) lifetime() (t totals) {
	for spins := 0; ; spins++ {
		f := s.folds.Load()
		if s.folding.Load() != 0 {
			runtime.Gosched()
			continue
		}
		t = totals{completed: s.completed.Load()}
		for j := range s.lanes {
			t.completed += s.lanes[j].completed.Load()
		}
		for i := range t.hist {
			t.hist[i] = s.rtHist[i].Load()
			for j := range s.ring {
				t.hist[i] += s.ring[j].rtHist[i].Load()
			}
		}
		for l := range t.blocked {
			t.blocked[l] = s.blocked[l].Load()
			for j := range s.ring {
				t.blocked[l] += s.ring[j].blocked[l].Load()
			}
		}
		t.rtSum, t.passed = s.rtSum.Load(), s.passed.Load()
		for j := range s.ring {
			t.rtSum += s.ring[j].rtSum.Load()
		}
		for j := range s.lanes {
			t.passed += s.lanes[j].passed.Load()
		}
		if s.folding.Load() == 0 && s.folds.Load() == f {
			return t
		}
	}
}

// totals are the lifetime counters that live partly in the ring.
type totals struct {
	passed, completed uint64
	blocked           [NumLevels]uint64
	rtSum             int64
	hist              [numBounds + 1]uint64
}

// inFlight is passed - completed.
func (s *resourceStats) inFlight() int64 {
	t := s.lifetime()
	return int64(t.passed - t.completed)
}

func (s *resourceStats) read(now int64) ResourceStats {
	t := s.lifetime()
	passed, completed, rtSum, hist, blocked := t.passed, t.completed, t.rtSum, t.hist, t.blocked
	waited := s.waited.Load()
	out := ResourceStats{
		Resource: s.name,
		// The lanes count every admitted call; the snapshot reports the
		// ones admitted at once, so that Passed, Waited and Blocked
		// partition the calls. The two counters are separate atomics: a
		// snapshot taken between them may misplace a call by one.
		Passed:    passed - min(waited, passed),
		Completed: completed,
		RTSum:     time.Duration(rtSum),
		RTHist:    Histogram{Bounds: histBounds, Counts: hist[:]},
		Waited:    waited,
		WaitSum:   time.Duration(s.waitSum.Load()),
		WaitHist:  Histogram{Bounds: histBounds, Counts: make([]uint64, numBounds+1)},
		Errors:    s.errors.Load(),
	}
	out.InFlight = int64(passed - completed)
	for i := range s.waitHist {
		out.WaitHist.Counts[i] = s.waitHist[i].Load()
	}
	out.Blocked = blocked
	for l := range s.listRefused {
		out.NotAllowed[l] = s.listRefused[l][0].Load()
		out.Denied[l] = s.listRefused[l][1].Load()
	}
	cur, n := s.epochOf(now), int64(len(s.ring))
	w := WindowStats{Span: time.Duration(s.bucketNs * n)}
	haveMin := false
	for i := range s.ring {
		b := &s.ring[i]
		if e := b.epoch.Load(); e > cur || e <= cur-n {
			continue
		}
		for l := range b.blocked {
			w.Blocked += b.blocked[l].Load()
		}
		w.Errors += b.errors.Load()
		w.RTSum += time.Duration(b.rtSum.Load())
		if m := time.Duration(b.minRT.Load()); m != 0 && (!haveMin || m-1 < w.MinRT) {
			w.MinRT, haveMin = m-1, true
		}
		if m := time.Duration(b.maxRT.Load()); m > w.MaxRT {
			w.MaxRT = m
		}
	}
	for i := range s.lanes {
		b := &s.lanes[i]
		if e := b.epoch.Load(); e > cur || e <= cur-n {
			continue
		}
		w.Admitted += b.passed.Load()
		w.Completed += b.completed.Load()
	}
	out.Recent = w
	return out
}
