package metrics

import "github.com/prometheus/client_golang/prometheus"

// NewClusterCollector returns a Prometheus collector of src alone:
// flowgate_cluster_request_duration_seconds and
// flowgate_cluster_breaker_open, with the same names and help as
// NewCollector(eng, WithCluster(src)). It is for a program that runs a
// token server without an engine of its own: flowgate serve registers it
// beside the token service's collector. It panics if src is nil.
func NewClusterCollector(src ClusterSource) prometheus.Collector {
	if src == nil {
		panic("metrics: NewClusterCollector with a nil source")
	}
	var c config
	WithCluster(src)(&c)
	return &clusterCollector{read: c.cluster, d: newDescs()}
}

type clusterCollector struct {
	read func() ClusterMetrics
	d    descs
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.d.clusterDur
	ch <- c.d.breaker
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	collectCluster(ch, &c.d, c.read())
}
