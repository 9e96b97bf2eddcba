package sentinel

import (
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// Java Sentinel's rule fields and enums (com.alibaba.csp.sentinel.slots.*
// FlowRule, DegradeRule, ParamFlowRule, AuthorityRule, SystemRule) with the
// defaults their classes set.

// windowNote says why a cluster QPS rule is approximate: the token server
// counts sliding_window, which weights the older bucket by how much of it
// is still inside the window, where Sentinel counts both buckets whole.
const windowNote = "sliding_window with 2 buckets weights the older bucket; Sentinel counts both 500ms buckets whole"

// javaWarmNote says where Java's warm-up differs from sentinel-golang's,
// which sentinel_warm_up follows: the pass count it syncs on.
const javaWarmNote = "Java syncs on the previous calendar second's passes; sentinel_warm_up (as sentinel-golang) on the two 500ms buckets before the current one, the same second unless a second's first call comes in its second half"

// origin is the param that carries Sentinel's origin (limitApp) in flowgate.
const origin = "origin"

// limitAppOK reports a flow or param rule's limitApp that flowgate cannot
// keep: a limit for one origin only.
func limitAppOK(e *element) (string, bool) {
	app := e.str("limitApp")
	return app, app == "" || app == "default"
}

func javaFlow(e *element, opts Options) ([]flow.Rule, notes) {
	var n notes
	grade := e.whole("grade", 1, 0, 1)
	count := e.num("count", 0)
	strategy := e.whole("strategy", 0, 0, 2)
	behavior := e.whole("controlBehavior", 0, 0, 3)
	warm := e.whole("warmUpPeriodSec", 10, 0, math.MaxInt32)
	queue := e.whole("maxQueueingTimeMs", 500, 0, math.MaxInt32)
	if app, ok := limitAppOK(e); !ok {
		return cannot("limitApp %q limits the calls of one origin only; flowgate has no per-origin-only limit", app)
	}
	r := flow.Rule{ID: idOf(e), Resource: e.str("resource")}
	switch strategy {
	case 1:
		r.RefResource = e.str("refResource")
	case 2:
		return cannot("strategy 2 (chain: count only calls entering through refResource %q) has no counterpart", e.str("refResource"))
	}
	if grade == 0 { // thread count: calls in flight
		r.Algorithm, r.Limit = flow.AlgoConcurrency, math.Floor(count)
		if r.Limit != count {
			n.add("thread count %s rounded down to %s", num(count), num(r.Limit))
		}
	} else {
		javaQPS(e, &r, &n, count, behavior, warm, queue)
	}
	if e.boolean("clusterMode") {
		r.Cluster = javaCluster(e)
		n.add("cluster: decided by flowgate's Redis token server (threshold %s), not a Sentinel token server", r.Cluster.Threshold)
	}
	return []flow.Rule{r}, n
}

// javaQPS maps a QPS flow rule (grade 1) of the given controlBehavior to
// r: Sentinel's window, warm-up (with throttling for behavior 3) or
// throttling. In cluster mode the token server counts sliding_window.
func javaQPS(e *element, r *flow.Rule, n *notes, count float64, behavior, warm, queue int64) {
	r.Window, r.Limit = time.Second, count
	switch behavior {
	case 0:
		// Sentinel's own window; the token server counts sliding_window.
		r.Algorithm = flow.AlgoSentinelWindow
		if e.boolean("clusterMode") {
			r.Algorithm, r.Buckets = flow.AlgoSlidingWindow, 2
			n.add(windowNote)
		}
	case 1, 3:
		// Java's default cold factor is 3 (csp.sentinel.flow.cold.factor).
		warmUp(r, n, warm, 3, count, behavior == 3, queue)
		n.add(javaWarmNote)
		if behavior == 3 {
			n.add("Java's warm-up rate limiter spaces calls in whole milliseconds (rounded); sentinel_warm_up in nanoseconds, as sentinel-golang")
		}
		if e.boolean("clusterMode") {
			// Sentinel's token server counts QPS without warm-up.
			r.Algorithm, r.Warmup, r.ColdFactor, r.MaxWait, r.Buckets = flow.AlgoSlidingWindow, 0, 0, 0, 2
			*n = notes{"cluster: Sentinel's token server has no warm-up; " + windowNote}
		}
	case 2:
		r.Algorithm, r.MaxWait = flow.AlgoLeakyBucket, ms(queue)
	}
}

// javaCluster maps a cluster-mode rule's clusterConfig to a cluster spec.
func javaCluster(e *element) *flow.ClusterSpec {
	c := &flow.ClusterSpec{Threshold: "per_instance", Fallback: "allow"}
	if cc := e.object("clusterConfig"); cc != nil {
		if cc.whole("thresholdType", 0, 0, 1) == 1 {
			c.Threshold = "global"
		}
		// Sentinel passes a call when the token server fails and
		// fallbackToLocalWhenFail is false (default true).
		if !cc.has("fallbackToLocalWhenFail") || cc.boolean("fallbackToLocalWhenFail") {
			c.Fallback = "local"
		}
	}
	return c
}

// javaDegrade maps a DegradeRule as Java Sentinel 1.8's circuit breakers
// (ExceptionCircuitBreaker, ResponseTimeCircuitBreaker) decide it: one
// bucket over statIntervalMs, open when the measure is above count (or
// slowRatioThreshold), a slow ratio threshold of 1 when every call is slow.
func javaDegrade(e *element) ([]flow.Rule, notes) {
	var n notes
	grade := e.whole("grade", 0, 0, 2)
	count := e.num("count", 0)
	r := flow.Rule{ID: idOf(e), Resource: e.str("resource"), Algorithm: flow.AlgoCircuitBreaker,
		OpenFor:     sec(e.whole("timeWindow", 0, 0, math.MaxInt32)),
		MinRequests: int(e.whole("minRequestAmount", 5, 0, 1<<30)),
		Window:      ms(e.whole("statIntervalMs", 1000, 1, math.MaxInt32)),
		Buckets:     1,
		Probes:      1,
	}
	switch grade {
	case 0:
		// Java rounds count to whole ms (Math.round).
		r.Strategy, r.SlowCall = flow.BreakerSlowRatio, ms(int64(math.Floor(count+0.5)))
		r.Threshold = javaRatio(e.num("slowRatioThreshold", 1), true)
	case 1:
		r.Strategy, r.Threshold = flow.BreakerErrorRatio, javaRatio(count, false)
	case 2:
		// Java opens when errors > count; error_count opens when errors
		// reach its threshold, the next whole number.
		r.Strategy, r.Threshold = flow.BreakerErrorCount, math.Floor(count)+1
	}
	if app, ok := limitAppOK(e); !ok {
		return cannot("limitApp %q: a breaker for one origin only has no counterpart", app)
	}
	return []flow.Rule{r}, n
}

// javaRatio is the threshold at which a ratio breaker opens on exactly
// the ratios Java's does, which are above t, and for the slow ratio also
// 1 when t is 1. flowgate opens above its threshold, which must be in
// (0, 1]: Java's 0 (open at any error) becomes the least positive float,
// and a slow threshold of 1 the float just below 1, which only a ratio
// of 1 exceeds (a window holds far fewer than 2^52 calls).
func javaRatio(t float64, slow bool) float64 {
	switch {
	case t <= 0:
		return math.SmallestNonzeroFloat64
	case slow && t >= 1:
		return math.Nextafter(1, 0)
	}
	return t
}

func javaParamFlow(e *element, opts Options) ([]flow.Rule, notes) {
	var n notes
	if app, ok := limitAppOK(e); !ok {
		return cannot("limitApp %q limits the calls of one origin only; flowgate has no per-origin-only limit", app)
	}
	grade := e.whole("grade", 1, 0, 1)
	count := e.num("count", 0)
	r := flow.Rule{ID: idOf(e), Resource: e.str("resource"), Level: flow.LevelParam,
		Param: paramName(opts, e.whole("paramIdx", 0, math.MinInt32, math.MaxInt32)), Limit: count}
	for _, it := range e.array("paramFlowItemList") {
		v, ok := it.scalarText("object")
		if !ok {
			continue
		}
		if r.Items == nil {
			r.Items = map[string]float64{}
		}
		r.Items[v] = it.num("count", 0)
	}
	if grade == 0 {
		// Java's ParamFlowChecker asks the token server for QPS rules
		// only: a thread-count rule is decided locally in cluster mode too.
		r.Algorithm = flow.AlgoConcurrency
		return []flow.Rule{r}, n
	}
	if e.boolean("clusterMode") {
		return javaClusterParam(e, r, "durationInSec", "burstCount", "controlBehavior", "maxQueueingTimeMs")
	}
	dur := e.whole("durationInSec", 1, 1, math.MaxInt32)
	throttling := e.whole("controlBehavior", 0, 0, 2) == 2
	hotspotRule(&r, dur, throttling, e.whole("maxQueueingTimeMs", 0, 0, math.MaxInt32), math.Floor(e.num("burstCount", 0)))
	if throttling {
		n.add("Java rounds each value's spacing to the nearest millisecond; sentinel_hotspot floors it, as sentinel-golang does")
	} else {
		n.add("sentinel_hotspot is sentinel-golang's port of Java's per-value bucket, measured against sentinel-golang only")
	}
	return []flow.Rule{r}, n
}

// javaClusterParam maps a cluster-mode QPS parameter rule: the token
// server counts each value's calls per second (Java's ClusterParamFlowChecker
// on its ClusterParamMetric), which flowgate's token server does for a
// param-level sliding_window rule with a cluster block.
// unusedKeys are the fields the token server does not use (they differ
// between ParamFlowRule and GatewayFlowRule).
func javaClusterParam(e *element, r flow.Rule, unusedKeys ...string) ([]flow.Rule, notes) {
	var n notes
	r.Algorithm, r.Window, r.Buckets, r.Cluster = flow.AlgoSlidingWindow, time.Second, 2, javaCluster(e)
	n.add("cluster: decided per value by flowgate's Redis token server (threshold %s), not a Sentinel token server; %s", r.Cluster.Threshold, windowNote)
	var unused []string
	for _, k := range unusedKeys {
		if e.has(k) {
			unused = append(unused, k)
		}
	}
	if len(unused) > 0 {
		n.add("%s not used: Sentinel's token server counts each value per second, as flowgate's does", strings.Join(unused, ", "))
	}
	return []flow.Rule{r}, n
}

// javaAuthority maps an AuthorityRule as Java's AuthorityRuleChecker
// decides it: a call without an origin passes either list; an origin is
// on the list when it equals one of limitApp's comma-separated entries,
// spaces included (Java does not trim them).
func javaAuthority(e *element) ([]flow.Rule, notes) {
	app := e.str("limitApp")
	if strings.TrimSpace(app) == "" {
		return cannot("limitApp is empty: Sentinel ignores an authority rule without origins")
	}
	var values []string
	seen := map[string]bool{}
	for _, v := range strings.Split(app, ",") {
		// An empty entry matches no origin: an empty origin passes first.
		if v != "" && !seen[v] {
			seen[v] = true
			values = append(values, v)
		}
	}
	if len(values) == 0 {
		return cannot("limitApp %q names no origin: Java's list then refuses every origin (white) or none (black)", app)
	}
	r := flow.Rule{ID: idOf(e), Resource: e.str("resource"), Level: flow.LevelParam, Param: origin, Algorithm: flow.AlgoAllow,
		Values: values, AllowMissing: true}
	if e.whole("strategy", 0, 0, 1) == 1 {
		r.Algorithm, r.AllowMissing = flow.AlgoDeny, false
	}
	return []flow.Rule{r}, nil
}

// javaSystem maps highestCpuUsage to the adaptive section's systemCPU; the
// other limits of a SystemRule have no counterpart.
func javaSystem(e *element, sys *system) ([]flow.Rule, notes) {
	var n notes
	var rest []string
	for _, k := range []string{"highestSystemLoad", "qps", "avgRt", "maxThread"} {
		if v := e.num(k, -1); v >= 0 {
			rest = append(rest, k+" "+num(v))
		}
	}
	cpu := e.num("highestCpuUsage", -1)
	if cpu < 0 || cpu > 1 {
		if cpu > 1 {
			rest = append(rest, "highestCpuUsage "+num(cpu)+" (above 1: never reached)")
		}
		return cannot("system rule (%s): %s", strings.Join(rest, ", "), systemCannot)
	}
	sys.cpu(cpu)
	n.add("highestCpuUsage %s -> adaptive.systemCPU: Java refuses every inbound call above it; flowgate's guard still admits calls within BBR's in-flight bound, and reads a smoothed CPU of this process's share, not the host's", num(cpu))
	if len(rest) > 0 {
		n.add("dropped, no counterpart: %s (%s)", strings.Join(rest, ", "), systemCannot)
	}
	return []flow.Rule{}, n
}

// systemCannot says why a system limit other than CPU has no counterpart.
const systemCannot = "flowgate's system guard is CPU-driven; it has no load-average, total-QPS, average-RT or total-thread limit"

// idOf keeps a source rule's string id (sentinel-golang's); the
// dashboard's numbers repeat across rule kinds, so those rules are named
// afresh.
func idOf(e *element) string {
	var s string
	if e.has("id") && json.Unmarshal(e.raw["id"], &s) == nil {
		return s
	}
	return ""
}
