package algo

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// slidingWindow estimates the permits taken in the last Window from Buckets
// sub-window counters, without keeping one timestamp per call.
//
// The estimator. Sub-windows are width w = Window/Buckets long, aligned to
// multiples of w since the Unix epoch (see clock.Origin), as Sentinel's
// LeapArray aligns its buckets; k is the one now falls in and
// f = (now - k*w)/w how far into it now is. The window (now-Window, now]
// covers sub-windows k-B+1..k whole and the oldest one, k-B, for its last
// (1-f) part. Its count is taken in proportion, assuming its calls were
// spread evenly:
//
//	estimate = sum(count[k-B+1..k]) + count[k-B] * (1-f)
//
// With Buckets = 1 this is the classic two-counter sliding window (current
// window plus the previous one weighted by overlap); more buckets confine
// the even-spread guess to one small sub-window. A call of n passes when
// estimate + n <= capacity(limit). It is an estimate: it can over- or
// under-count by at most the guessed part, count[k-B]. Use sliding_log when
// the limit must be exact.
//
// With maxWait > 0 a call may wait until the estimate, with nothing else
// admitted, lets it pass. The estimator has no future sub-windows, so a
// queued call is counted at once in the current one: concurrent callers see
// it and cannot overbook the moment it was promised. The price is that it
// leaves the window that much earlier than a count taken when it runs would,
// an error of the same kind the estimator already makes.
type slidingWindow struct {
	mu     sync.Mutex
	width  int64   // sub-window length, ns
	off    int64   // the clock origin's phase in a sub-window: now+off is aligned
	head   int64   // index of the newest sub-window counted
	hs     int     // its slot in counts (the ring's position is arbitrary)
	cap    int64   // capacity(limit)
	counts []int32 // ring of B+1 counters: sub-window i lives at i % (B+1)
}

var _ Limiter = (*slidingWindow)(nil)

// MaxSlidingWindowLimit bounds a sliding_window's limit: it keeps int32
// counters, queued calls included, far from overflow.
const MaxSlidingWindowLimit = 1 << 29

// newSlidingWindow counts from now; origin is clock.Origin's Unix ns.
func newSlidingWindow(window time.Duration, buckets int, limit float64, now, origin int64) (*slidingWindow, error) {
	if buckets < 1 {
		return nil, fmt.Errorf("sliding_window: buckets %d must be >= 1", buckets)
	}
	if limit > MaxSlidingWindowLimit {
		return nil, fmt.Errorf("sliding_window: limit %v must be <= %d", limit, MaxSlidingWindowLimit)
	}
	width := int64(window) / int64(buckets)
	if width < 1 {
		return nil, fmt.Errorf("sliding_window: window %v is shorter than %d buckets of 1ns", window, buckets)
	}
	s := &slidingWindow{width: width, off: floorMod(origin, width), cap: capacity(limit), counts: make([]int32, buckets+1)}
	s.head = floorDiv(now+s.off, width)
	return s, nil
}

// roll moves head to now's sub-window, zeroing the ones it passes; mu held.
// now is already shifted by off.
// A clock that goes backwards keeps counting in head.
func (s *slidingWindow) roll(now int64) (k int64, f float64) {
	k = floorDiv(now, s.width)
	if k < s.head {
		return s.head, 0 // as if at the start of head: the most conservative
	}
	steps := min(k-s.head, int64(len(s.counts)))
	for range steps {
		if s.hs++; s.hs == len(s.counts) {
			s.hs = 0
		}
		s.counts[s.hs] = 0
	}
	s.head = k
	return k, float64(now-k*s.width) / float64(s.width)
}

// slot is the ring index of sub-window head-b+j: j = 0 is the oldest,
// partly covered one, which sits just after head in the ring.
func (s *slidingWindow) slot(j int) int {
	return (s.hs + 1 + j) % len(s.counts)
}

// sums returns the whole part and the oldest, partly covered, sub-window.
// Every counter in the ring is in the window, so the whole part is all of
// them but the oldest.
func (s *slidingWindow) sums() (whole, oldest float64) {
	var total int64
	for _, c := range s.counts {
		total += int64(c)
	}
	o := s.counts[s.slot(0)]
	return float64(total - int64(o)), float64(o)
}

func (s *slidingWindow) TryAcquire(now int64, n int, maxWait time.Duration) Decision {
	now += s.off
	s.mu.Lock()
	defer s.mu.Unlock()
	if int64(n) > s.cap {
		return Decision{Verdict: Never}
	}
	k, f := s.roll(now)
	whole, oldest := s.sums()
	c := float64(s.cap)
	if est := whole + oldest*(1-f); est+float64(n) <= c {
		s.counts[s.hs] += int32(n)
		return Decision{Verdict: Granted, Remaining: math.Max(0, math.Floor(c-est-float64(n))), Reset: s.reset(k, now)}
	}
	wait := s.until(k, now, float64(n))
	if wait <= maxWait {
		s.counts[s.hs] += int32(n)
		return Decision{Verdict: Granted, Wait: wait, Reset: s.reset(k, now)}
	}
	return Decision{Verdict: Refused, Wait: wait, Reset: s.reset(k, now)}
}

// until is how long until a call of n passes if nothing else is admitted:
// the first moment the estimate drops to cap-n. Sub-window by sub-window, the
// whole part loses its oldest counter at each boundary, and within one
// sub-window the partly covered counter fades linearly. mu held.
func (s *slidingWindow) until(k, now int64, n float64) time.Duration {
	b := int64(len(s.counts)) - 1
	room := float64(s.cap) - n
	whole, _ := s.sums()
	for j := int64(0); j <= b+1; j++ {
		// Sub-window k+j: counters k+j-b+1..k are still whole, k+j-b fades.
		var oldest float64
		if j <= b {
			oldest = float64(s.counts[s.slot(int(j))])
		}
		if j > 0 {
			whole -= oldest
		}
		if whole > room {
			continue
		}
		start := (k + j) * s.width
		if oldest == 0 || whole+oldest <= room {
			return nonNeg(start - now)
		}
		// whole + oldest*(1-f) <= room  <=>  f >= 1 - (room-whole)/oldest.
		// Rounding may miss by a nanosecond either way: settle it with the
		// very expression TryAcquire will evaluate.
		fits := func(t int64) bool {
			f := float64(t-start) / float64(s.width)
			return whole+oldest*(1-f)+n <= float64(s.cap)
		}
		t := start + int64(math.Ceil((1-(room-whole)/oldest)*float64(s.width)))
		for t > start && t > now && fits(t-1) {
			t--
		}
		for !fits(t) {
			t++
		}
		return nonNeg(t - now)
	}
	return nonNeg((k+b+1)*s.width - now) // unreachable: everything has left by then
}

// reset is how long until the estimate is zero: when the newest non-empty
// sub-window has left the window. mu held.
func (s *slidingWindow) reset(k, now int64) time.Duration {
	b := len(s.counts) - 1
	for j := b; j >= 0; j-- { // newest first
		if s.counts[s.slot(j)] != 0 {
			return nonNeg((k-int64(b-j)+int64(b)+1)*s.width - now)
		}
	}
	return 0
}

// Refund takes permits back from the newest sub-window, where the call was
// counted (queued calls too); it never takes more than is there.
func (s *slidingWindow) Refund(at int64, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[s.hs] = max(s.counts[s.hs]-int32(n), 0)
}

// SetLimit changes the capacity; the counts stay.
func (s *slidingWindow) SetLimit(_ int64, limit float64) {
	s.mu.Lock()
	s.cap = capacity(limit)
	s.mu.Unlock()
}

func (s *slidingWindow) Remaining(now int64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, f := s.roll(now + s.off)
	whole, oldest := s.sums()
	return math.Max(0, math.Floor(float64(s.cap)-whole-oldest*(1-f)))
}
