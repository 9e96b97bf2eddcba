package tokenrpc

import (
	"sync"
	"sync/atomic"
)

// nsCounter counts one namespace's accepted calls in the current second
// (a fixed window, as cheap as a self-protection cap needs to be: at the
// boundary it may accept up to twice the cap over a 1s span, never more).
type nsCounter struct {
	sec atomic.Int64 // the second counted, nanotime / 1e9
	n   atomic.Int64
}

// admit counts one call at now (ns) and reports whether it is within max.
func (c *nsCounter) admit(now, max int64) bool {
	sec := now / 1e9
	if old := c.sec.Load(); old != sec {
		// The CAS winner starts the new second; losers count into it.
		if c.sec.CompareAndSwap(old, sec) {
			c.n.Store(0)
		}
	}
	return c.n.Add(1) <= max
}

// guard holds the per-namespace counters.
type guard struct {
	max      int64
	mu       sync.Mutex
	counters atomic.Pointer[map[string]*nsCounter] // copy-on-write: readers never lock
	overflow nsCounter
}

func newGuard(max int64) *guard {
	g := &guard{max: max}
	m := map[string]*nsCounter{}
	g.counters.Store(&m)
	return g
}

// admit reports whether namespace ns may have one more call at now.
func (g *guard) admit(ns string, now int64) bool {
	if g.max <= 0 {
		return true
	}
	return g.counter(ns).admit(now, g.max)
}

func (g *guard) counter(ns string) *nsCounter {
	if c, ok := (*g.counters.Load())[ns]; ok {
		return c
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	old := *g.counters.Load()
	if c, ok := old[ns]; ok {
		return c
	}
	if len(old) >= maxNamespaces {
		return &g.overflow
	}
	m := make(map[string]*nsCounter, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	c := &nsCounter{}
	m[ns] = c
	g.counters.Store(&m)
	return c
}
