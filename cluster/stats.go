package cluster

import (
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/cluster/internal/guard"
	"github.com/flowgate/flowgate/flow"
)

// stats are the call counters shared with the remote client, and the
// lease counters only this server has.
type stats struct {
	guard.Counters
	leaseLocal, leaseFetches, leaseReturned atomic.Uint64

	settled, settleCharged, settleRefunded, settleForgiven atomic.Uint64
}

// Stats counts what a RedisTokenServer did since it started.
type Stats struct {
	Passed          uint64 // script calls that admitted (leases included)
	Blocked         uint64 // script calls that refused
	Errors          uint64 // calls that failed (timeouts, connection, bad replies)
	BreakerRejected uint64 // calls failed at once because the breaker was open
	LeaseLocal      uint64 // decisions served from a local lease, without Redis
	LeaseFetches    uint64 // leases taken (each one round trip)
	LeaseReturned   uint64 // unspent leased permits given back
	// Settled counts the calls settled at their actual cost
	// (flow.WithActualCost); SettleCharged and SettleRefunded the permits
	// charged and given back, summed over the rules (a lease's part
	// included), and SettleForgiven those a charge could not take (MaxDebt
	// owed, the window closed, or a rule that does not settle).
	Settled, SettleCharged, SettleRefunded, SettleForgiven uint64
	// Latency is the distribution of round trips to Redis, failed ones
	// included; calls the
	// breaker rejected and decisions from a lease made none. Bounds are in
	// seconds: Counts[i] are calls up to Bounds[i], the last one those
	// above every bound.
	Latency     flow.Histogram
	LatencySum  time.Duration // total time of the calls Latency counts
	BreakerOpen bool          // the breaker of some Redis node is open: calls on its keys fail at once (see OpenNodes)
	Instances   int           // the instance count the local fallback divides by (see Instances)
}

// Stats returns the counters now; it never blocks a decision.
func (s *RedisTokenServer) Stats() Stats {
	st := Stats{
		Passed: s.st.Passed.Load(), Blocked: s.st.Blocked.Load(), Errors: s.st.Errors.Load(),
		BreakerRejected: s.st.BreakerRejected.Load(), LeaseLocal: s.st.leaseLocal.Load(),
		LeaseFetches: s.st.leaseFetches.Load(), LeaseReturned: s.st.leaseReturned.Load(),
		Settled: s.st.settled.Load(), SettleCharged: s.st.settleCharged.Load(),
		SettleRefunded: s.st.settleRefunded.Load(), SettleForgiven: s.st.settleForgiven.Load(),
		Latency: s.st.Histogram(), LatencySum: s.st.Sum(),
		BreakerOpen: s.BreakerOpen(), Instances: s.Instances(),
	}
	return st
}

// BreakerOpen reports whether calls are failing fast without trying Redis:
// on a cluster, the calls on the keys of some node (OpenNodes names it).
func (s *RedisTokenServer) BreakerOpen() bool { return s.nodes.anyOpen() }

// Latency returns the round-trip histogram (seconds) and the total time of
// those round trips, as Stats does. With BreakerOpen it is what
// metrics.WithCluster(ts) exports; both name only flow and standard types,
// so this package needs no import of the exporter.
func (s *RedisTokenServer) Latency() (flow.Histogram, time.Duration) {
	return s.st.Histogram(), s.st.Sum()
}
