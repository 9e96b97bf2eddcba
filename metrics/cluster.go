package metrics

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// NewClusterCollector returns a Prometheus collector of src alone:
// flowgate_cluster_request_duration_seconds,
// flowgate_cluster_breaker_open and, when src is a NodeSource,
// flowgate_cluster_node_open, with the same names and help as
// NewCollector(eng, WithCluster(src)). It is for a program that runs a
// token server without an engine of its own: flowgate serve registers it
// beside the token service's collector. It panics if src is nil.
func NewClusterCollector(src ClusterSource) prometheus.Collector {
	if src == nil {
		panic("metrics: NewClusterCollector with a nil source")
	}
	var c config
	WithCluster(src)(&c)
	return &clusterCollector{read: c.cluster, nodes: c.nodes, d: newDescs()}
}

type clusterCollector struct {
	read  func() ClusterMetrics
	nodes *nodeGauge // nil: src keeps no breaker per node
	d     descs
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.d.clusterDur
	ch <- c.d.breaker
	c.nodes.describe(ch)
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	collectCluster(ch, &c.d, c.read())
	c.nodes.collect(ch)
}

// NameClusterNodeOpen is the per-node breaker gauge (see NodeSource).
const NameClusterNodeOpen = "flowgate_cluster_node_open"

// NodeSource is a ClusterSource that keeps a breaker per Redis node, as a
// *cluster.RedisTokenServer does: OpenNodes returns the addresses of the
// nodes whose breaker is open now, in any order. From such a source
// WithCluster and NewClusterCollector also export
// flowgate_cluster_node_open{node}.
type NodeSource interface {
	OpenNodes() []string
}

// nodeGauge exports flowgate_cluster_node_open: 1 for each node open now,
// 0 for each node that was open at an earlier collection, so that a node
// that closes reads 0 instead of vanishing (the set grows only with the
// nodes ever seen open: a cluster's handful). A nil *nodeGauge exports
// nothing.
type nodeGauge struct {
	desc *prometheus.Desc
	src  NodeSource
	mu   sync.Mutex
	seen map[string]struct{}
}

func newNodeGauge(src ClusterSource) *nodeGauge {
	n, ok := src.(NodeSource)
	if !ok {
		return nil
	}
	desc := prometheus.NewDesc(NameClusterNodeOpen,
		"1 while the breaker of this Redis node is open (calls on its keys take their fallback), 0 once it closed again.",
		[]string{"node"}, nil)
	return &nodeGauge{desc: desc, src: n, seen: map[string]struct{}{}}
}

func (g *nodeGauge) describe(ch chan<- *prometheus.Desc) {
	if g != nil {
		ch <- g.desc
	}
}

func (g *nodeGauge) collect(ch chan<- prometheus.Metric) {
	if g == nil {
		return
	}
	open := g.src.OpenNodes()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range open {
		g.seen[n] = struct{}{}
	}
	for _, n := range slices.Sorted(maps.Keys(g.seen)) {
		ch <- constMetric(g.desc, prometheus.GaugeValue, boolValue(slices.Contains(open, n)), n)
	}
}
