package tokenrpc

import (
	"strings"
	"sync/atomic"

	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of the token service. The Redis side (round-trip latency
// and breaker) is not exported here: the program registers
// metrics.NewClusterCollector(ts) beside Collector, as flowgate serve does,
// so this package does not import the exporter.
const (
	NameServerRequests        = "flowgate_token_server_requests_total"
	NameServerDuration        = "flowgate_token_server_request_duration_seconds"
	NameServerBackendErrors   = "flowgate_token_server_backend_errors_total"
	NameServerUnauthenticated = "flowgate_token_server_unauthenticated_total"
)

const (
	methodAcquire = iota
	methodRelease
	methodSettle
	numMethods
)

var methodNames = [numMethods]string{"acquire", "release", "settle"}

const numStatuses = 8 // tokenpb.Status values

// durationBounds are the upper bounds, in seconds, of the handling-time
// histogram (the server's own time, Redis round trip included).
var durationBounds = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5}

type serverStats struct {
	requests        [numMethods][numStatuses]atomic.Uint64
	hist            [numMethods][13]atomic.Uint64 // len(durationBounds)+1
	sumNs           [numMethods]atomic.Int64
	backendErrors   atomic.Uint64
	unauthenticated atomic.Uint64
}

func (st *serverStats) observe(method int, s tokenpb.Status, ns int64) {
	if int(s) >= 0 && int(s) < numStatuses {
		st.requests[method][s].Add(1)
	}
	st.sumNs[method].Add(ns)
	sec := float64(ns) / 1e9
	i := 0
	for i < len(durationBounds) && sec > durationBounds[i] {
		i++
	}
	st.hist[method][i].Add(1)
}

// Requests returns how many calls of method ("acquire", "release" or "settle") were
// answered with status so far.
func (s *Server) Requests(method string, status tokenpb.Status) uint64 {
	for m, name := range methodNames {
		if name == method && int(status) >= 0 && int(status) < numStatuses {
			return s.st.requests[m][status].Load()
		}
	}
	return 0
}

// Collector returns the server's Prometheus metrics; register it where you
// like (flowgate serve puts it on /metrics).
func (s *Server) Collector() prometheus.Collector {
	c := &collector{s: s,
		requests: prometheus.NewDesc(NameServerRequests,
			"Token service calls by method and answer status.", []string{"method", "status"}, nil),
		duration: prometheus.NewDesc(NameServerDuration,
			"Time the token service took to answer a call, Redis round trip included.", []string{"method"}, nil),
		backend: prometheus.NewDesc(NameServerBackendErrors,
			"Calls the wrapped token server could not decide because its Redis was unavailable.", nil, nil),
		unauth: prometheus.NewDesc(NameServerUnauthenticated,
			"Calls refused for a missing or wrong bearer token.", nil, nil),
	}
	return c
}

type collector struct {
	s                                   *Server
	requests, duration, backend, unauth *prometheus.Desc
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.duration
	ch <- c.backend
	ch <- c.unauth
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := &c.s.st
	for m := range numMethods {
		for s := 1; s < numStatuses; s++ {
			name := strings.ToLower(strings.TrimPrefix(tokenpb.Status(s).String(), "STATUS_"))
			ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(st.requests[m][s].Load()), methodNames[m], name)
		}
		var count uint64
		buckets := make(map[float64]uint64, len(durationBounds))
		for i, b := range durationBounds {
			count += st.hist[m][i].Load()
			buckets[b] = count
		}
		count += st.hist[m][len(durationBounds)].Load()
		ch <- prometheus.MustNewConstHistogram(c.duration, count, float64(st.sumNs[m].Load())/1e9, buckets, methodNames[m])
	}
	ch <- prometheus.MustNewConstMetric(c.backend, prometheus.CounterValue, float64(st.backendErrors.Load()))
	ch <- prometheus.MustNewConstMetric(c.unauth, prometheus.CounterValue, float64(st.unauthenticated.Load()))
}
