package metrics

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/flow"
)

// NewCollector returns a Prometheus collector of eng's statistics. Register
// it on a registry of your choosing; nothing is registered globally. Each
// scrape takes one eng.Snapshot() and turns it into constant metrics, so
// the collector keeps no copy of the counters and adds no work to Entry.
// It panics if eng is nil.
func NewCollector(eng *flow.Engine, opts ...Option) prometheus.Collector {
	if eng == nil {
		panic("metrics: NewCollector with a nil engine")
	}
	c := &collector{eng: eng, cfg: newConfig(opts)}
	c.d = newDescs()
	return c
}

type collector struct {
	eng *flow.Engine
	cfg config
	d   descs

	alerts alertTracker
	guard  passedGuard
}

type descs struct {
	requests, errors, inFlight, responseTime, wait         *prometheus.Desc
	ruleLimit, ruleWindow, ruleKeys, ruleInfo              *prometheus.Desc
	factor, systemMax, cpu, cpuSource                      *prometheus.Desc
	adaptiveLimit, adaptiveRTT                             *prometheus.Desc
	clusterRequests, clusterFallbacks, clusterDur, breaker *prometheus.Desc
	reloadOK, reloadTime, alertsFiring                     *prometheus.Desc
	breakerState, breakerMoves, shadowBlocked              *prometheus.Desc
	listRefusals, cost, costRatio, costOwed                *prometheus.Desc
	outAttempts, outRefused, throttleProb                  *prometheus.Desc
}

func newDescs() descs {
	ruleLabels := []string{"resource", "level", "rule"}
	bState, bMoves := breakerDescs()
	cost, costRatio, costOwed := costDescs()
	outAttempts, outRefused, throttleProb := outboundDescs()
	return descs{
		outAttempts: outAttempts, outRefused: outRefused, throttleProb: throttleProb,
		cost: cost, costRatio: costRatio, costOwed: costOwed,
		breakerState: bState, breakerMoves: bMoves, shadowBlocked: shadowDesc(), listRefusals: listRefusalsDesc(),
		requests: prometheus.NewDesc(NameRequests,
			"Calls to Entry by outcome: passed at once, passed after waiting, or blocked at the named level. The three results partition the calls.",
			[]string{"resource", "level", "result"}, nil),
		errors: prometheus.NewDesc(NameRequestErrors,
			"Admitted calls that exited with an error.", []string{"resource"}, nil),
		inFlight: prometheus.NewDesc(NameInFlight,
			"Calls admitted and not yet exited.", []string{"resource"}, nil),
		responseTime: prometheus.NewDesc(NameResponseTime,
			"Time from admission to Exit of admitted calls.", []string{"resource"}, nil),
		wait: prometheus.NewDesc(NameWait,
			"Time calls that queued (rules with MaxWait) waited before passing.", []string{"resource"}, nil),
		ruleLimit: prometheus.NewDesc(NameRuleLimit,
			"Effective limit of a rule now, after the adaptive factor: permits per window, or calls in flight for concurrency rules.",
			ruleLabels, nil),
		ruleWindow: prometheus.NewDesc(NameRuleWindow,
			"Window a rule's limit is counted over.", ruleLabels, nil),
		ruleKeys: prometheus.NewDesc(NameRuleKeys,
			"Users or IPs a rule tracks now (0 for global rules).", ruleLabels, nil),
		ruleInfo: prometheus.NewDesc(NameRuleInfo,
			"Constant 1 for each rule in force, labelled with its algorithm and modes.",
			[]string{"resource", "level", "rule", "algorithm", "adaptive", "cluster"}, nil),
		factor: prometheus.NewDesc(NameAdaptiveFactor,
			"Scale applied to the limits of adaptive rules: below 1 while the CPU controller cuts, above 1 while its idle-CPU boost is up; 1 when no controller runs.", nil, nil),
		adaptiveLimit: prometheus.NewDesc(NameAdaptiveLimit,
			"Current concurrency limit of an adaptive_concurrency rule (global level), found from response times.",
			[]string{"resource", "rule"}, nil),
		adaptiveRTT: prometheus.NewDesc(NameAdaptiveRTT,
			"Response-time estimates of an adaptive_concurrency rule: short (last window's mean) and long (no-queue).",
			[]string{"resource", "rule", "estimate"}, nil),
		systemMax: prometheus.NewDesc(NameSystemMaxInFlight,
			"In-flight calls above which the system guard blocks every call; 0 when it is off.", nil, nil),
		cpu: prometheus.NewDesc(NameCPU,
			"CPU utilisation of the CPU this process may use, as the adaptive controller last sampled it.", nil, nil),
		cpuSource: prometheus.NewDesc(NameCPUSource,
			"Constant 1, labelled with what the adaptive controller's CPU samples measure: cgroup, process, host or custom.",
			[]string{"source"}, nil),
		clusterRequests: prometheus.NewDesc(NameClusterRequests,
			"Requests to the cluster token server by answer: passed, blocked or error.", []string{"result"}, nil),
		clusterFallbacks: prometheus.NewDesc(NameClusterFallbacks,
			"Cluster decisions taken by a rule's fallback policy because the token server could not answer.",
			[]string{"policy"}, nil),
		clusterDur: prometheus.NewDesc(NameClusterDuration,
			"Latency of requests to the cluster token server.", nil, nil),
		breaker: prometheus.NewDesc(NameClusterBreaker,
			"1 while the circuit breaker in front of the token server is open, else 0.", nil, nil),
		reloadOK: prometheus.NewDesc(NameReloadSuccessful,
			"1 if the last rule reload succeeded, 0 if it failed and the previous rules are kept.", nil, nil),
		reloadTime: prometheus.NewDesc(NameReloadTimestamp,
			"Unix time of the last successful rule reload; 0 if none.", nil, nil),
		alertsFiring: prometheus.NewDesc(NameAlertsFiring,
			"1 while a flowgate alert fires, 0 after it resolved.", []string{"alert", "resource"}, nil),
	}
}

// Describe sends the descriptors of every metric this collector can export
// with its options.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	d := &c.d
	for _, x := range []*prometheus.Desc{
		d.requests, d.errors, d.inFlight, d.ruleLimit, d.ruleWindow, d.ruleKeys, d.ruleInfo,
		d.factor, d.systemMax, d.clusterRequests, d.clusterFallbacks, d.breakerState, d.breakerMoves, d.adaptiveLimit, d.adaptiveRTT,
		d.shadowBlocked, d.listRefusals, d.cost, d.costRatio, d.costOwed,
		d.outAttempts, d.outRefused, d.throttleProb,
	} {
		ch <- x
	}
	if c.cfg.histograms {
		ch <- d.responseTime
		ch <- d.wait
	}
	if c.cfg.cpu != nil {
		ch <- d.cpu
	}
	if c.cfg.cpuSource != "" {
		ch <- d.cpuSource
	}
	if c.cfg.cluster != nil {
		ch <- d.clusterDur
		ch <- d.breaker
		c.cfg.nodes.describe(ch)
	}
	if c.cfg.reload != nil {
		ch <- d.reloadOK
		ch <- d.reloadTime
	}
	if c.cfg.alerts != nil {
		ch <- d.alertsFiring
	}
}

// Collect reads one snapshot of the engine (and of the optional sources)
// and sends it as constant metrics.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.eng.Snapshot()
	d := &c.d
	for i := range s.Resources {
		c.collectResource(ch, &s.Resources[i])
	}
	// A resource with rules but no traffic yet still gets its zero series.
	for _, res := range idleResources(&s) {
		c.collectResource(ch, zeroStats(res, &s))
	}
	for i := range s.Rules {
		c.collectRule(ch, &s.Rules[i], i)
	}
	c.collectBreakers(ch, &s)
	c.collectShadow(ch, &s)
	c.collectCost(ch, &s)
	c.collectOutbound(ch, &s)
	c.collectLists(ch, &s)
	ch <- constMetric(d.factor, prometheus.GaugeValue, s.AdaptiveFactor)
	ch <- constMetric(d.systemMax, prometheus.GaugeValue, float64(s.SystemLimit))
	for _, k := range labelKeys(clusterResults, s.Cluster.Requests) {
		ch <- constMetric(d.clusterRequests, prometheus.CounterValue, float64(s.Cluster.Requests[k]), k)
	}
	for _, k := range labelKeys(fallbackPolicies, s.Cluster.Fallbacks) {
		ch <- constMetric(d.clusterFallbacks, prometheus.CounterValue, float64(s.Cluster.Fallbacks[k]), k)
	}
	c.collectSources(ch)
}

// collectRule sends the gauges of the i-th rule in force.
func (c *collector) collectRule(ch chan<- prometheus.Metric, r *flow.RuleStats, i int) {
	d := &c.d
	lv, id := r.Level.String(), ruleLabel(r.ID, i)
	hasLimit, hasWindow := ruleGauges(r)
	if hasLimit {
		ch <- constMetric(d.ruleLimit, prometheus.GaugeValue, r.EffectiveLimit, r.Resource, lv, id)
	}
	if hasWindow {
		ch <- constMetric(d.ruleWindow, prometheus.GaugeValue, r.Window.Seconds(), r.Resource, lv, id)
	}
	ch <- constMetric(d.ruleKeys, prometheus.GaugeValue, float64(r.Keys), r.Resource, lv, id)
	ch <- constMetric(d.ruleInfo, prometheus.GaugeValue, 1,
		r.Resource, lv, id, r.Algorithm.String(), boolLabel(r.Adaptive), boolLabel(r.Cluster))
	if a := r.AdaptiveConcurrency; a != nil {
		ch <- constMetric(d.adaptiveLimit, prometheus.GaugeValue, float64(a.Limit), r.Resource, id)
		ch <- constMetric(d.adaptiveRTT, prometheus.GaugeValue, a.ShortRTT.Seconds(), r.Resource, id, EstimateShort)
		ch <- constMetric(d.adaptiveRTT, prometheus.GaugeValue, a.LongRTT.Seconds(), r.Resource, id, EstimateLong)
	}
}

// collectSources sends what the optional sources (WithCPU, WithCluster,
// WithReload, WithAlerts) report; a source not given sends nothing.
func (c *collector) collectSources(ch chan<- prometheus.Metric) {
	d := &c.d
	if c.cfg.cpu != nil {
		if v := c.cfg.cpu(); !math.IsNaN(v) {
			ch <- constMetric(d.cpu, prometheus.GaugeValue, v)
		}
	}
	if c.cfg.cpuSource != "" {
		ch <- constMetric(d.cpuSource, prometheus.GaugeValue, 1, c.cfg.cpuSource)
	}
	if c.cfg.cluster != nil {
		collectCluster(ch, d, c.cfg.cluster())
		c.cfg.nodes.collect(ch)
	}
	if c.cfg.reload != nil {
		st := c.cfg.reload.ReloadStatus()
		ch <- constMetric(d.reloadOK, prometheus.GaugeValue, boolValue(st.Successful))
		ch <- constMetric(d.reloadTime, prometheus.GaugeValue, unixSeconds(st.LastSuccess))
	}
	if c.cfg.alerts != nil {
		for a, firing := range c.alerts.states(c.cfg.alerts) {
			ch <- constMetric(d.alertsFiring, prometheus.GaugeValue, boolValue(firing), a.Alert, a.Resource)
		}
	}
}

// ruleGauges says which of the per-rule limit and window gauges a rule
// has: an allow or deny list has neither, a circuit breaker a window but
// no limit.
func ruleGauges(r *flow.RuleStats) (limit, window bool) {
	list := r.Algorithm == flow.AlgoAllow || r.Algorithm == flow.AlgoDeny
	return !list && r.Algorithm != flow.AlgoCircuitBreaker, !list
}

// collectCluster sends a token server's latency histogram and breaker state.
func collectCluster(ch chan<- prometheus.Metric, d *descs, m ClusterMetrics) {
	count, buckets := cumulative(m.Duration)
	ch <- constHistogram(d.clusterDur, count, m.DurationSum.Seconds(), buckets)
	ch <- constMetric(d.breaker, prometheus.GaugeValue, boolValue(m.BreakerOpen))
}

func (c *collector) collectResource(ch chan<- prometheus.Metric, r *flow.ResourceStats) {
	d := &c.d
	res := r.Resource
	global := flow.LevelGlobal.String()
	waited := r.Waited
	passed := c.guard.passed(res, r.Passed)
	ch <- constMetric(d.requests, prometheus.CounterValue, float64(passed), res, global, ResultPassed)
	ch <- constMetric(d.requests, prometheus.CounterValue, float64(waited), res, global, ResultWaited)
	for lv := flow.Level(0); lv < flow.NumLevels; lv++ {
		ch <- constMetric(d.requests, prometheus.CounterValue, float64(r.Blocked[lv]), res, lv.String(), ResultBlocked)
	}
	ch <- constMetric(d.errors, prometheus.CounterValue, float64(r.Errors), res)
	ch <- constMetric(d.inFlight, prometheus.GaugeValue, float64(r.InFlight), res)
	if c.cfg.histograms {
		count, buckets := cumulative(r.RTHist)
		ch <- constHistogram(d.responseTime, count, r.RTSum.Seconds(), buckets, res)
		count, buckets = cumulative(r.WaitHist)
		ch <- constHistogram(d.wait, count, r.WaitSum.Seconds(), buckets, res)
	}
}

// idleResources returns the resources that have rules but no entry in
// s.Resources (which is sorted by name), sorted and without repeats.
func idleResources(s *flow.Snapshot) []string {
	var out []string
	for i := range s.Rules {
		name := s.Rules[i].Resource
		if _, ok := slices.BinarySearchFunc(s.Resources, name, func(r flow.ResourceStats, n string) int {
			return cmpString(r.Resource, n)
		}); !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// zeroStats are the statistics of a resource with rules and no entry in the
// snapshot yet: all zero, with the histogram bounds the others use, so its
// buckets line up with theirs in sums and quantiles.
func zeroStats(name string, s *flow.Snapshot) *flow.ResourceStats {
	r := &flow.ResourceStats{Resource: name}
	if len(s.Resources) > 0 {
		r.RTHist.Bounds = s.Resources[0].RTHist.Bounds
		r.WaitHist.Bounds = s.Resources[0].WaitHist.Bounds
	}
	return r
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// labelKeys returns want followed by any other key of m, sorted, so the
// expected label values exist from the start and none the engine adds later
// is dropped.
func labelKeys(want []string, m map[string]uint64) []string {
	if len(m) == 0 {
		return want
	}
	var extra []string
	for k := range m {
		if !slices.Contains(want, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return want
	}
	slices.Sort(extra)
	return append(slices.Clip(want), extra...)
}

// cumulative turns a flow.Histogram (a count per bucket, the last one above
// every bound) into Prometheus's cumulative upper-bound counts and total.
func cumulative(h flow.Histogram) (uint64, map[float64]uint64) {
	buckets := make(map[float64]uint64, len(h.Bounds))
	var acc uint64
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			acc += h.Counts[i]
		}
		buckets[b] = acc
	}
	for i := len(h.Bounds); i < len(h.Counts); i++ {
		acc += h.Counts[i]
	}
	return acc, buckets
}

// constMetric and constHistogram make a constant metric, or, should a label
// value be unusable (a resource name that is not UTF-8), an invalid metric
// that fails that one series in the scrape instead of panicking.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

func constHistogram(d *prometheus.Desc, count uint64, sum float64, buckets map[float64]uint64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstHistogram(d, count, sum, buckets, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// ruleLabel is the rule label of the i-th rule in force: its id, or, as ids
// are optional, its place in the rules ("rules[3]"), so that two rules
// without ids never share a series.
func ruleLabel(id string, i int) string {
	if id != "" {
		return id
	}
	return "rules[" + strconv.Itoa(i) + "]"
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func boolLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
