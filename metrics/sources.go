package metrics

import (
	"iter"
	"maps"
	"sync"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// Option configures NewCollector and RegisterOTel.
type Option func(*config)

type config struct {
	histograms bool
	cpu        func() float64
	cpuSource  string                // what cpu measures; "" = not exported
	cluster    func() ClusterMetrics // from WithCluster
	nodes      *nodeGauge            // from WithCluster, when its source is a NodeSource
	reload     ReloadSource
	alerts     AlertSource
}

func newConfig(opts []Option) config {
	c := config{histograms: true}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// WithHistograms turns the per-resource response time and wait histograms
// (flowgate_response_time_seconds, flowgate_wait_seconds; in OTel
// flowgate.request.duration and flowgate.request.time_in_queue) on or off.
// Each costs one series per bucket per resource. Default on.
func WithHistograms(on bool) Option { return func(c *config) { c.histograms = on } }

// WithCPU exports flowgate_cpu_usage_ratio from cpu, which returns the CPU
// utilisation in 0..1 (NaN when unknown; the sample is then left out).
// Without it (or WithAdaptive) the metric is not exported.
func WithCPU(cpu func() float64) Option { return func(c *config) { c.cpu = cpu } }

// AdaptiveSource is what the adaptive controller offers the exporters: the
// CPU utilisation (0..1) it last sampled. The adaptive factor itself is read
// from the engine, which is where it is applied.
type AdaptiveSource interface {
	// CPU returns the last sampled utilisation, 0..1. It is called on
	// every collection, possibly from several goroutines at once, so it must
	// be cheap and safe for concurrent use.
	CPU() float64
}

// CPUSourceNamer is implemented by an AdaptiveSource that can say what its
// CPU samples measure ("cgroup", "process", "host"; adaptive.Controller
// does): WithAdaptive then also exports flowgate_cpu_source_info{source}.
type CPUSourceNamer interface {
	CPUSourceName() string
}

// WithAdaptive is WithCPU(src.CPU), plus flowgate_cpu_source_info when src
// is a CPUSourceNamer; a nil src adds nothing.
func WithAdaptive(src AdaptiveSource) Option {
	if src == nil {
		return nil
	}
	return func(c *config) {
		c.cpu = src.CPU
		if n, ok := src.(CPUSourceNamer); ok {
			c.cpuSource = n.CPUSourceName() // fixed when the controller is built
		}
	}
}

// ClusterSource is what a token server client offers: the latency of its
// requests to the token server and whether its circuit breaker is open.
// Request and fallback counts come from the engine's Snapshot. The methods
// name only flow and standard types, so a token server (package cluster)
// satisfies it without importing this package: the arrow runs from the
// exporter to the producer, never back.
type ClusterSource interface {
	// Latency returns the histogram of request latencies in seconds, counted
	// since start (Counts per bucket, the last one above every bound), and
	// the total time of those requests. It is called on every collection,
	// possibly concurrently.
	Latency() (flow.Histogram, time.Duration)
	// BreakerOpen is true while requests are not sent to the token server.
	BreakerOpen() bool
}

// ClusterMetrics is a ClusterSource's state at one instant, as ClusterFunc
// returns it.
type ClusterMetrics struct {
	// Duration is the histogram of request latencies in seconds, counted
	// since start (Counts per bucket, the last one above every bound).
	Duration flow.Histogram
	// DurationSum is the total time of the requests counted in Duration.
	DurationSum time.Duration
	// BreakerOpen is true while requests are not sent to the token server.
	BreakerOpen bool
}

// ClusterFunc adapts a function to ClusterSource. WithCluster calls it once
// per collection.
type ClusterFunc func() ClusterMetrics

// Latency returns f()'s Duration and DurationSum.
func (f ClusterFunc) Latency() (flow.Histogram, time.Duration) {
	m := f()
	return m.Duration, m.DurationSum
}

// BreakerOpen returns f().BreakerOpen.
func (f ClusterFunc) BreakerOpen() bool { return f().BreakerOpen }

// WithCluster exports flowgate_cluster_request_duration_seconds and
// flowgate_cluster_breaker_open from src (a *cluster.RedisTokenServer or
// *remote.TokenServer, or a ClusterFunc), and flowgate_cluster_node_open
// when src is a NodeSource. A nil src adds nothing.
func WithCluster(src ClusterSource) Option {
	if src == nil {
		return nil
	}
	read, ok := src.(ClusterFunc)
	if !ok {
		read = func() ClusterMetrics {
			h, sum := src.Latency()
			return ClusterMetrics{Duration: h, DurationSum: sum, BreakerOpen: src.BreakerOpen()}
		}
	}
	return func(c *config) { c.cluster, c.nodes = read, newNodeGauge(src) }
}

// ReloadSource reports the outcome of the last rule reload, as a rules
// watcher knows it.
type ReloadSource interface {
	// ReloadStatus returns the outcome of the last reload. It is called
	// on every collection, possibly concurrently.
	ReloadStatus() ReloadStatus
}

// ReloadStatus is the outcome of the last reload attempt.
type ReloadStatus struct {
	// Successful is false while the last attempt failed (bad, empty or
	// missing file) and the previous rules are kept.
	Successful bool
	// LastSuccess is when rules were last loaded successfully; zero if never.
	LastSuccess time.Time
}

// ReloadFunc adapts a function to ReloadSource, e.g. to map a watcher's
// Status to a ReloadStatus.
type ReloadFunc func() ReloadStatus

// ReloadStatus returns f().
func (f ReloadFunc) ReloadStatus() ReloadStatus { return f() }

// WithReload exports flowgate_rules_last_reload_successful and
// flowgate_rules_last_reload_success_timestamp_seconds from src.
func WithReload(src ReloadSource) Option { return func(c *config) { c.reload = src } }

// AlertSource lists the alerts firing now. Its method names only standard
// types, so an alerter (package alerting) satisfies it without importing
// this package.
type AlertSource interface {
	// Firing yields the name (the alertname label) and the resource (""
	// for an alert on all traffic) of each alert firing now. It is called on
	// every collection, possibly concurrently.
	Firing() iter.Seq2[string, string]
}

// FiringAlert names one firing alert.
type FiringAlert struct {
	Alert    string // the alert's name (its alertname label)
	Resource string // the resource; "" for an alert on all traffic
}

// AlertFunc adapts a function to AlertSource.
type AlertFunc func() []FiringAlert

// Firing yields each alert f returns.
func (f AlertFunc) Firing() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, a := range f() {
			if !yield(a.Alert, a.Resource) {
				return
			}
		}
	}
}

// WithAlerts exports flowgate_alerts_firing{alert,resource}: 1 for each
// firing alert, and 0 for an alert that fired earlier and has resolved (so
// its series does not vanish while a graph or rule still reads it).
func WithAlerts(src AlertSource) Option { return func(c *config) { c.alerts = src } }

// alertTracker remembers every alert seen firing, so that a resolved alert
// reads 0 instead of its series disappearing. It holds at most alert names
// × resources entries.
type alertTracker struct {
	mu   sync.Mutex
	seen map[FiringAlert]bool
}

// states asks src what fires now and returns every alert seen so far, true
// for those firing.
func (t *alertTracker) states(src AlertSource) map[FiringAlert]bool {
	var firing []FiringAlert
	for name, res := range src.Firing() {
		firing = append(firing, FiringAlert{Alert: name, Resource: res})
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = make(map[FiringAlert]bool)
	}
	for a := range t.seen {
		t.seen[a] = false
	}
	for _, a := range firing {
		t.seen[a] = true
	}
	return maps.Clone(t.seen)
}
