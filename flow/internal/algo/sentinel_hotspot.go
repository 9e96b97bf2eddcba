package algo

import (
	"math"
	"sync"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// sentinelHotspot is SentinelHotspot: the per-value limiter of
// sentinel-golang v1.0.4's hotspot (parameter) QPS rules (core/hotspot/
// traffic_shaping.go), kept so that hotspot rules imported from Sentinel
// decide call for call as they did there. It runs on Sentinel's
// millisecond clock (Unix time), in whole tokens.
//
// Without maxWait (Sentinel's reject behaviour) it is a bucket of
// limit+burst tokens (burst is Sentinel's burstCount: extra tokens, default
// 0) that refills in lumps, not continuously as token_bucket does: the
// first call fills it; later, only once more than a whole Window has
// passed since the last refill does a call add ⌊elapsed·limit/Window⌋
// tokens (at most up to the top) and restart the count, and a call that
// finds too few tokens is refused.
//
// With maxWait (Sentinel's throttling) calls are spaced ⌊n·Window/limit⌋
// whole milliseconds apart; a call whose slot is less than maxWait away
// waits for it (Sentinel compares strictly, so maxWait 1ns is Sentinel's
// maxQueueingTimeMs 0: only a call whose slot has come passes), and idle
// time is not banked.
type sentinelHotspot struct {
	mu sync.Mutex
	hotState
}

// hotState is sentinelHotspot's state without its lock, so that Remaining
// can work on a copy.
type hotState struct {
	offset  int64 // ns to add to the engine's Nanotime for Unix time
	dur     int64 // Window in ms
	count   int64 // tokens per Window: ⌊limit⌋, at least 1
	burst   int64 // extra tokens on top of count
	started bool  // the first call has come
	last    int64 // Unix ms of the last refill (reject) or latest slot (throttling)
	tokens  int64 // reject: tokens left
}

var _ Limiter = (*sentinelHotspot)(nil)

func newSentinelHotspot(s *Spec, limit float64, clk clock.Clock, now int64) *sentinelHotspot {
	h := &sentinelHotspot{hotState: hotState{dur: s.Window.Milliseconds(), count: capacity(limit), burst: int64(s.Burst)}}
	h.offset = clk.Now().UnixNano() - now
	return h
}

func (h *hotState) unixMs(now int64) int64 { return floorDiv(now+h.offset, int64(time.Millisecond)) }

// until is the time from now to the start of Unix millisecond ms.
func (h *hotState) until(now, ms int64) time.Duration {
	return nonNeg(ms*int64(time.Millisecond) - h.offset - now)
}

// refill is the tokens elapsed ms add: ⌊elapsed·count/dur⌋, saturated
// where Sentinel's int64 product would overflow.
func (h *hotState) refill(elapsed int64) int64 {
	if float64(elapsed)*float64(h.count) >= math.MaxInt64/2 {
		return h.count + h.burst
	}
	return elapsed * h.count / h.dur
}

func (h *sentinelHotspot) TryAcquire(now int64, n int, maxWait time.Duration) Decision {
	h.mu.Lock()
	defer h.mu.Unlock()
	if maxWait > 0 {
		// More than the limit and its burst never passes, queued or not:
		// the queue's first call would otherwise go free at any size.
		if int64(n) > h.count+h.burst {
			return Decision{Verdict: Never}
		}
		return h.queue(now, int64(n), maxWait)
	}
	return h.reject(now, int64(n))
}

// reject is Sentinel's rejectTrafficShapingController for one value; mu held.
func (h *hotState) reject(now, k int64) Decision {
	top := h.count + h.burst
	if k > top {
		return Decision{Verdict: Never}
	}
	ms := h.unixMs(now)
	if !h.started {
		h.started, h.last, h.tokens = true, ms, top-k
		return Decision{Verdict: Granted, Remaining: float64(h.tokens), Reset: h.until(now, ms+h.dur+1)}
	}
	elapsed := ms - h.last
	if elapsed > h.dur {
		v := min(h.refill(elapsed)+h.tokens, top) - k
		if v >= 0 {
			h.tokens, h.last = v, ms
			return Decision{Verdict: Granted, Remaining: float64(v), Reset: h.until(now, ms+h.dur+1)}
		}
	} else if h.tokens >= k {
		h.tokens -= k
		return Decision{Verdict: Granted, Remaining: float64(h.tokens), Reset: h.until(now, h.last+h.dur+1)}
	}
	// The first millisecond both past the window and with enough refilled.
	need := (k - h.tokens) * h.dur
	at := h.last + max(h.dur+1, need/h.count+min(need%h.count, 1))
	return Decision{Verdict: Refused, Wait: h.until(now, at), Reset: h.until(now, at)}
}

// queue is Sentinel's throttlingTrafficShapingController for one value;
// mu held.
func (h *hotState) queue(now, k int64, maxWait time.Duration) Decision {
	ms := h.unixMs(now)
	if !h.started {
		h.started, h.last = true, ms
		return Decision{Verdict: Granted}
	}
	expected := h.last + k*h.dur/h.count
	wait := expected - ms
	if wait <= 0 {
		h.last = ms
		return Decision{Verdict: Granted}
	}
	if time.Duration(wait)*time.Millisecond < maxWait {
		h.last = expected
		return Decision{Verdict: Granted, Wait: time.Duration(wait) * time.Millisecond}
	}
	// It passes from the first millisecond whose wait is under maxWait.
	at := expected - (int64(maxWait)+int64(time.Millisecond)-1)/int64(time.Millisecond) + 1
	return Decision{Verdict: Refused, Wait: h.until(now, at)}
}

// Refund gives tokens back (reject); a queued slot is kept: the queue
// cannot tell whose slot is whose.
func (h *sentinelHotspot) Refund(_ int64, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		h.tokens = min(h.tokens+int64(n), h.count+h.burst)
	}
}

// SetLimit changes the tokens per Window; the tokens left stay.
func (h *sentinelHotspot) SetLimit(_ int64, limit float64) {
	h.mu.Lock()
	h.count = capacity(limit)
	h.mu.Unlock()
}

// Remaining is what a reject-mode call would find now, without taking it.
func (h *sentinelHotspot) Remaining(now int64) float64 {
	h.mu.Lock()
	s := h.hotState
	h.mu.Unlock()
	top := s.count + s.burst
	if !s.started {
		return float64(top)
	}
	if elapsed := s.unixMs(now) - s.last; elapsed > s.dur {
		return float64(min(s.refill(elapsed)+s.tokens, top))
	}
	return float64(s.tokens)
}
