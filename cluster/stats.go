package cluster

import (
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// latencyBounds are the upper bounds, in seconds, of the round-trip
// histogram: around the 20ms default timeout.
var latencyBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5}

type stats struct {
	passed, blocked, errors, breakerRejected atomic.Uint64
	leaseLocal, leaseFetches, leaseReturned  atomic.Uint64
	hist                                     [12]atomic.Uint64 // len(latencyBounds)+1
	sumNs                                    atomic.Int64
}

func (s *stats) latency(ns int64) {
	s.sumNs.Add(ns)
	sec := float64(ns) / 1e9
	i := 0
	for i < len(latencyBounds) && sec > latencyBounds[i] {
		i++
	}
	s.hist[i].Add(1)
}

// histogram copies the round-trip counts now.
func (s *stats) histogram() flow.Histogram {
	h := flow.Histogram{Bounds: latencyBounds, Counts: make([]uint64, len(s.hist))}
	for i := range s.hist {
		h.Counts[i] = s.hist[i].Load()
	}
	return h
}

// Stats counts what a RedisTokenServer (or a RemoteTokenServer) did since
// it started.
type Stats struct {
	Passed          uint64 // script calls that admitted (leases included)
	Blocked         uint64 // script calls that refused
	Errors          uint64 // calls that failed (timeouts, connection, bad replies)
	BreakerRejected uint64 // calls failed at once because the breaker was open
	LeaseLocal      uint64 // decisions served from a local lease, without Redis
	LeaseFetches    uint64 // leases taken (each one round trip)
	LeaseReturned   uint64 // unspent leased permits given back
	// Latency is the distribution of round trips (to Redis, or to a
	// replica for RemoteTokenServer), failed ones included; calls the
	// breaker rejected and decisions from a lease made none. Bounds are in
	// seconds: Counts[i] are calls up to Bounds[i], the last one those
	// above every bound.
	Latency     flow.Histogram
	LatencySum  time.Duration // total time of the calls Latency counts
	BreakerOpen bool          // calls fail at once now (RemoteTokenServer: every replica's breaker is open)
	Instances   int           // live instances the last heartbeat saw (RemoteTokenServer: WithRemoteInstances)
}

// Stats returns the counters now; it never blocks a decision.
func (s *RedisTokenServer) Stats() Stats {
	st := Stats{
		Passed: s.st.passed.Load(), Blocked: s.st.blocked.Load(), Errors: s.st.errors.Load(),
		BreakerRejected: s.st.breakerRejected.Load(), LeaseLocal: s.st.leaseLocal.Load(),
		LeaseFetches: s.st.leaseFetches.Load(), LeaseReturned: s.st.leaseReturned.Load(),
		LatencySum:  time.Duration(s.st.sumNs.Load()),
		BreakerOpen: s.br.open(), Instances: s.Instances(),
	}
	st.Latency = s.st.histogram()
	return st
}

// BreakerOpen reports whether calls are failing fast without trying Redis.
func (s *RedisTokenServer) BreakerOpen() bool { return s.br.open() }

// Latency returns the round-trip histogram (seconds) and the total time of
// those round trips, as Stats does. With BreakerOpen it is what
// metrics.WithCluster(ts) exports; both name only flow and standard types,
// so this package needs no import of the exporter.
func (s *RedisTokenServer) Latency() (flow.Histogram, time.Duration) {
	return s.st.histogram(), time.Duration(s.st.sumNs.Load())
}
