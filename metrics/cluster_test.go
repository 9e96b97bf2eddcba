package metrics

import (
	"slices"
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

// nodeServer is shaped like cluster.RedisTokenServer: a breaker per node.
type nodeServer struct {
	tokenServer
	open []string
}

func (s *nodeServer) OpenNodes() []string { return slices.Clone(s.open) }

// TestClusterNodeOpen: flowgate_cluster_node_open has a series per node
// seen open, 1 while open and 0 after; none before any opened, and none
// from a source without per-node breakers (TestClusterCollector).
func TestClusterNodeOpen(t *testing.T) {
	ts := &nodeServer{}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewClusterCollector(ts))
	eng := flow.NewEngine()
	viaEngine := prometheus.NewPedanticRegistry()
	viaEngine.MustRegister(NewCollector(eng, WithCluster(ts)))
	head := `
# HELP flowgate_cluster_node_open 1 while the breaker of this Redis node is open (calls on its keys take their fallback), 0 once it closed again.
# TYPE flowgate_cluster_node_open gauge
`
	for _, step := range []struct {
		open []string
		want string
	}{
		{nil, ""},
		{[]string{"10.0.0.2:6379"}, head + `flowgate_cluster_node_open{node="10.0.0.2:6379"} 1` + "\n"},
		{[]string{"10.0.0.1:6379"}, head + `flowgate_cluster_node_open{node="10.0.0.1:6379"} 1
flowgate_cluster_node_open{node="10.0.0.2:6379"} 0
`},
		{nil, head + `flowgate_cluster_node_open{node="10.0.0.1:6379"} 0
flowgate_cluster_node_open{node="10.0.0.2:6379"} 0
`},
	} {
		ts.open = step.open
		for name, r := range map[string]*prometheus.Registry{"NewClusterCollector": reg, "WithCluster": viaEngine} {
			if err := testutil.GatherAndCompare(r, strings.NewReader(step.want), NameClusterNodeOpen); err != nil {
				t.Errorf("%s, open %v: %v", name, step.open, err)
			}
		}
	}
}
