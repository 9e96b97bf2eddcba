package cluster

import (
	"sync"
	"time"
)

// instanceTrust decides which live-instance count the local fallback
// divides a cluster limit by. A count below the truth over-admits (each
// instance takes a third of the limit where it should take a quarter), and
// the heartbeat set reads low for a while in two ways: a restart or
// FLUSHALL empties it and the instances re-join one by one (1, 2, 3, 4
// within a beat interval), and an instance whose beats failed for a TTL
// (Redis paused or down, its loop late on a loaded machine) is missing
// until its next beat, while the others, whose entries survived, read 3.
// The chaos soak caught the second: one engine at limit/3 through an
// outage, 108 admitted locally in a second against a fleet share of 100.
// Neither lasts a TTL once Redis answers: every live instance has beaten
// by then. So a higher count is believed at once, a lower one only once
// counts that low have been read for a whole TTL, and then the highest of
// them. A crash or a Close lowers the count a TTL later than Redis does:
// shares stay small a little longer, never large. The TTL must be read
// low throughout: a failed heartbeat (an outage, when others miss their
// beats too) starts it over, so a count read low before an outage and
// one read low after it (say in a FLUSHALL's re-join) are not taken for
// one spell. An instance that cannot reach Redis while the others can
// is counted out after its TTL and ours: it may be crashed or cut off,
// and only a cut-off one, deciding by its own fallback, over-admits.
type instanceTrust struct {
	mu       sync.Mutex
	trusted  int64
	lowSince time.Time // zero: no low spell (the last read was not below trusted, or failed)
	lowMax   int64     // the highest count read since lowSince
}

// observe takes a heartbeat's count, read at now, and returns the count to
// use; hold is the heartbeat TTL.
func (t *instanceTrust) observe(n int64, now time.Time, hold time.Duration) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case n >= t.trusted:
		t.trusted, t.lowSince = n, time.Time{}
	case t.lowSince.IsZero():
		t.lowSince, t.lowMax = now, n
	default:
		t.lowMax = max(t.lowMax, n)
		if now.Sub(t.lowSince) >= hold {
			t.trusted, t.lowSince = t.lowMax, time.Time{}
		}
	}
	return t.trusted
}

// failed notes a heartbeat that got no count: a low spell starts over.
func (t *instanceTrust) failed() {
	t.mu.Lock()
	t.lowSince = time.Time{}
	t.mu.Unlock()
}
