package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flowgate/flowgate/flow"
)

// tokenServer is shaped like cluster's servers: a ClusterSource through its
// own methods, not through a type of this package.
type tokenServer struct {
	h    flow.Histogram
	sum  time.Duration
	open bool
}

func (s *tokenServer) Latency() (flow.Histogram, time.Duration) { return s.h, s.sum }
func (s *tokenServer) BreakerOpen() bool                        { return s.open }

func TestClusterCollector(t *testing.T) {
	ts := &tokenServer{h: flow.Histogram{Bounds: []float64{0.001}, Counts: []uint64{2, 1}}, sum: 3 * time.Millisecond}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewClusterCollector(ts))
	want := `
# HELP flowgate_cluster_request_duration_seconds Latency of requests to the cluster token server.
# TYPE flowgate_cluster_request_duration_seconds histogram
flowgate_cluster_request_duration_seconds_bucket{le="0.001"} 2
flowgate_cluster_request_duration_seconds_bucket{le="+Inf"} 3
flowgate_cluster_request_duration_seconds_sum 0.003
flowgate_cluster_request_duration_seconds_count 3
# HELP flowgate_cluster_breaker_open 1 while the circuit breaker in front of the token server is open, else 0.
# TYPE flowgate_cluster_breaker_open gauge
flowgate_cluster_breaker_open 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	// The same source through WithCluster reads the same state, now open.
	ts.open = true
	eng := flow.NewEngine()
	reg = prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(eng, WithCluster(ts)))
	want = `
# HELP flowgate_cluster_breaker_open 1 while the circuit breaker in front of the token server is open, else 0.
# TYPE flowgate_cluster_breaker_open gauge
flowgate_cluster_breaker_open 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameClusterBreaker); err != nil {
		t.Error(err)
	}
}
