package cluster

import (
	"sync"
	"time"
)

// instanceTrust decides which live-instance count to believe. The local
// fallback divides a cluster limit by it, so a count too low over-admits:
// after a restart or FLUSHALL the heartbeat set is empty and instances
// re-join one by one (counts 1, 2, 3, 4 in the first second), and an
// outage then would let each engine take a third or half of the limit.
// So a count seen while this instance's own entry was missing (the set
// was wiped, or this instance could not beat for a TTL) only ever raises
// the trusted count, for hold (the heartbeat TTL: every live instance
// has beaten again by then); a count seen with the entry present is the
// truth (a graceful Close leaves at once, a crash after its TTL).
type instanceTrust struct {
	mu        sync.Mutex
	trusted   int64
	heldSince time.Time // zero: not holding
}

// observe takes a heartbeat's answer and returns the count to use.
func (t *instanceTrust) observe(n int64, present bool, now time.Time, hold time.Duration) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !present && t.trusted > 0:
		if t.heldSince.IsZero() {
			t.heldSince = now
		}
		t.trusted = max(t.trusted, n)
	case !t.heldSince.IsZero() && now.Sub(t.heldSince) < hold:
		t.trusted = max(t.trusted, n)
	default:
		t.heldSince = time.Time{}
		t.trusted = n
	}
	return t.trusted
}
