package metrics

import "sync"

// passedGuard keeps the "passed without waiting" counter monotonic. The
// engine counts admitted and waited calls with two atomic adds and reports
// Passed as their difference; a snapshot taken between them sees a waited
// call as passed at once, and the next one moves it to waited, so Passed
// can dip by the few calls in that gap. A dip of a counter reads as a reset to
// Prometheus and OTel, and rate() turns it into a spike. The engine's
// counters never reset for its lifetime, so holding the largest value
// exported is right: the dip lasts until the next call passes at once.
type passedGuard struct {
	mu   sync.Mutex
	last map[string]uint64
}

// passed returns v, resource's Passed, never below what it returned before.
func (g *passedGuard) passed(resource string, v uint64) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		g.last = make(map[string]uint64)
	}
	if prev, ok := g.last[resource]; ok && prev > v {
		return prev
	}
	g.last[resource] = v
	return v
}
