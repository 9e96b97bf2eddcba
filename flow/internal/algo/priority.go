package algo

import "sync/atomic"

// Priority is a call's class for the concurrency caps: the lower classes
// are refused first. The engine's public Priority has the same numbers.
type Priority int8

// The classes, lowest first.
const (
	PriorityLow      Priority = -1
	PriorityNormal   Priority = 0
	PriorityHigh     Priority = 1
	PriorityCritical Priority = 2
	numPriorities             = 4
)

// ClassCap is how many permits in flight a class may fill under a limit of
// limit, share being the class's fraction of it: at least 1, so a low
// share never closes a small limit for good.
func ClassCap(limit int64, share float64) int64 {
	if share >= 1 {
		return limit
	}
	return max(1, int64(float64(limit)*share+1e-9))
}

// acquireUpTo takes k in-flight permits from inFlight when the count stays
// at most classLimit; full is the whole limit (for Remaining, and to tell
// whether the refusal was for the class). Lock-free: one CAS loop.
func acquireUpTo(inFlight *atomic.Int64, k, classLimit, full int64) Decision {
	if k > full {
		return Decision{Verdict: Never}
	}
	for {
		cur := inFlight.Load()
		if cur+k > classLimit {
			// Shed: the whole limit had room, the class's share had not.
			v := Refused
			if cur+k <= full {
				v = Shed
			}
			return Decision{Verdict: v, Remaining: float64(max(full-cur, 0))}
		}
		// A failed CAS means another call took or released permits in
		// between: decide again on the new count.
		if inFlight.CompareAndSwap(cur, cur+k) {
			return Decision{Verdict: Granted, Remaining: float64(full - cur - k)}
		}
	}
}

// releaseFloor gives back n permits, never taking the count below zero: a
// permit released twice (an engine bug) must not open room later.
func releaseFloor(inFlight *atomic.Int64, n int) {
	for {
		cur := inFlight.Load()
		if inFlight.CompareAndSwap(cur, max(cur-int64(n), 0)) {
			return
		}
	}
}
