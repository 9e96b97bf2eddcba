package guard

import (
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// latencyBounds are the upper bounds, in seconds, of the round-trip
// histogram: around the 20ms default timeout.
var latencyBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5}

// Counters count calls and their round trips, lock-free.
type Counters struct {
	Passed, Blocked, Errors, BreakerRejected atomic.Uint64
	hist                                     [12]atomic.Uint64 // len(latencyBounds)+1
	sumNs                                    atomic.Int64
}

// Latency records one round trip of ns nanoseconds.
func (c *Counters) Latency(ns int64) {
	c.sumNs.Add(ns)
	sec := float64(ns) / 1e9
	i := 0
	for i < len(latencyBounds) && sec > latencyBounds[i] {
		i++
	}
	c.hist[i].Add(1)
}

// Histogram copies the round-trip counts now (bounds in seconds).
func (c *Counters) Histogram() flow.Histogram {
	h := flow.Histogram{Bounds: latencyBounds, Counts: make([]uint64, len(c.hist))}
	for i := range c.hist {
		h.Counts[i] = c.hist[i].Load()
	}
	return h
}

// Sum is the total time of the round trips recorded.
func (c *Counters) Sum() time.Duration { return time.Duration(c.sumNs.Load()) }
