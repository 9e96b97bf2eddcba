package sentinel

import (
	"math"
	"strings"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// sentinel-golang v1.0.4's rule fields and enums (core/flow, core/
// circuitbreaker, core/hotspot, core/isolation, core/system; the hotspot
// JSON form is ext/datasource's HotspotRule).

func goFlow(e *element) ([]flow.Rule, notes) {
	var n notes
	calc := e.whole("tokenCalculateStrategy", 0, 0, 2)
	behavior := e.whole("controlBehavior", 0, 0, 1)
	threshold := e.num("threshold", 0)
	interval := e.whole("statIntervalInMs", 0, 0, math.MaxUint32)
	queue := e.whole("maxQueueingTimeMs", 0, 0, math.MaxUint32)
	warm := e.whole("warmUpPeriodSec", 0, 0, math.MaxUint32)
	cold := e.whole("warmUpColdFactor", 3, 0, math.MaxUint32)
	if cold <= 1 { // sentinel-golang falls back to its default of 3
		cold = 3
	}
	r := flow.Rule{ID: idOf(e), Resource: e.str("resource"), Limit: threshold, Window: time.Second}
	if interval > 0 {
		r.Window = ms(interval)
	}
	if e.whole("relationStrategy", 0, 0, 1) == 1 {
		r.RefResource = e.str("refResource")
	}
	switch {
	case calc == 2:
		return cannot("tokenCalculateStrategy 2 (MemoryAdaptive: the threshold follows process memory) has no counterpart; flowgate's adaptive scaling follows CPU")
	case calc == 1:
		warmUp(&r, &n, warm, cold, threshold, behavior == 1, queue)
		if interval != 0 && interval != 1000 {
			n.add("sentinel_warm_up counts its threshold per 1s; sentinel-golang per statIntervalInMs %d", interval)
		}
	case behavior == 1:
		r.Algorithm, r.MaxWait = flow.AlgoLeakyBucket, ms(queue)
	default:
		r.Algorithm = flow.AlgoSentinelWindow
		// sentinel-golang counts 1s (or no statIntervalInMs) in two 500ms
		// buckets, as sentinel_window does; another interval in
		// interval/500ms buckets when that divides, else in one.
		if interval != 0 && interval != 1000 {
			b := int64(1)
			if interval >= 500 && interval <= 10000 && interval%500 == 0 {
				b = interval / 500
			}
			n.add("sentinel_window counts %s in 2 buckets; sentinel-golang counts it in %d", r.Window, b)
		}
	}
	return []flow.Rule{r}, n
}

// warmUp maps Sentinel's warm-up (with throttling when queued) to
// sentinel_warm_up, which runs sentinel-golang's formula.
func warmUp(r *flow.Rule, n *notes, warm, cold int64, threshold float64, queued bool, queue int64) {
	r.Algorithm, r.Window, r.Warmup, r.ColdFactor = flow.AlgoSentinelWarmUp, time.Second, sec(warm), float64(cold)
	if queued {
		r.MaxWait = ms(queue)
		if queue == 0 {
			// maxWait 0 would count a window instead of spacing calls.
			r.MaxWait = time.Nanosecond
			n.add("maxQueueingTimeMs 0 becomes maxWait 1ns: a call whose slot is 1ns away waits where Sentinel refuses it")
		}
	}
	c := float64(cold)
	if w := float64(warm); 2*w*threshold/(1+c) < 1 { // Sentinel's maxToken = warningToken
		n.add("warm-up %ss of %s/s is too short for one warm-up token: Sentinel then admits every call, sentinel_warm_up admits %s/s", num(w), num(threshold), num(threshold))
	}
}

func goBreaker(e *element) ([]flow.Rule, notes) {
	var n notes
	interval := e.whole("statIntervalMs", 0, 0, math.MaxUint32)
	r := flow.Rule{ID: idOf(e), Resource: e.str("resource"), Algorithm: flow.AlgoCircuitBreaker,
		OpenFor: ms(e.whole("retryTimeoutMs", 0, 0, math.MaxUint32)),
		// sentinel-golang's 0 (its default) lets the first outcome open
		// it, as 1 does here; flowgate's 0 would mean its own default, 5.
		MinRequests: int(max(1, e.whole("minRequestAmount", 0, 0, 1<<30))),
		Window:      ms(interval),
		Threshold:   e.num("threshold", 0),
		Probes:      int(max(1, e.whole("probeNum", 0, 0, 1<<30))), // 0 means one probe
	}
	switch e.whole("strategy", 0, 0, 2) {
	case 0:
		r.Strategy, r.SlowCall = flow.BreakerSlowRatio, ms(e.whole("maxAllowedRtMs", 0, 0, math.MaxInt64/int64(1e6)))
		ratioAtLeast(&r, &n)
	case 1:
		r.Strategy = flow.BreakerErrorRatio
		ratioAtLeast(&r, &n)
	case 2:
		// sentinel-golang compares errors with uint64(threshold).
		r.Strategy, r.Threshold = flow.BreakerErrorCount, math.Floor(r.Threshold)
		if r.Threshold < 1 {
			return cannot("error count threshold %s: sentinel-golang then opens at every completed call past minRequestAmount, errors or not; flowgate's error_count counts at least 1 error", num(e.num("threshold", 0)))
		}
	}
	if r.Window == 0 {
		// Zero is not flowgate's default window here but a breaker with no
		// statistics span, which flowgate refuses.
		return cannot("statIntervalMs 0: a breaker needs a statistics window (flowgate's window must be > 0)")
	}
	r.Buckets = goBuckets(interval, e.whole("statSlidingWindowBucketCount", 0, 0, math.MaxUint32))
	return []flow.Rule{r}, n
}

// goBuckets is the bucket count sentinel-golang gives a breaker's window:
// the rule's when it divides statIntervalMs, else (0 included, the
// default) one, a tumbling window.
func goBuckets(interval, buckets int64) int {
	if buckets == 0 || interval%buckets != 0 {
		return 1
	}
	return int(buckets)
}

// sentinelPrecision is sentinel-golang's util.Float64Equals tolerance.
const sentinelPrecision = 1e-8

// ratioAtLeast keeps sentinel-golang's ratio test: it opens when the ratio
// is above the threshold or within 1e-8 of it (so at 0.5 exactly for 0.5),
// where flowgate opens only above it; the threshold less 1e-8 opens at the
// same ratios.
func ratioAtLeast(r *flow.Rule, n *notes) {
	if r.Threshold < sentinelPrecision {
		n.add("sentinel-golang opens at a ratio within 1e-8 of %s, 0 included; flowgate only above it", num(r.Threshold))
		return
	}
	r.Threshold -= sentinelPrecision
}

func goHotspot(e *element, opts Options) ([]flow.Rule, notes) {
	var n notes
	name := e.str("paramKey")
	if name == "" {
		name = paramName(opts, e.whole("paramIndex", 0, math.MinInt32, math.MaxInt32))
	}
	threshold := float64(e.whole("threshold", 0, 0, math.MaxInt64))
	r := flow.Rule{ID: idOf(e), Resource: e.str("resource"), Level: flow.LevelParam, Param: name, Limit: threshold}
	if c := e.whole("paramsMaxCapacity", 0, 0, 1<<30); c > 0 {
		r.MaxKeys = int(c)
	}
	r.Items = goItems(e)
	if e.whole("metricType", 0, 0, 1) == 0 {
		r.Algorithm = flow.AlgoConcurrency
		return []flow.Rule{r}, n
	}
	dur := max(1, e.whole("durationInSec", 1, 0, math.MaxInt32))
	hotspotRule(&r, dur, e.whole("controlBehavior", 0, 0, 1) == 1, e.whole("maxQueueingTimeMs", 0, 0, math.MaxInt32),
		float64(e.whole("burstCount", 0, 0, math.MaxInt64)))
	return []flow.Rule{r}, n
}

// hotspotRule maps a QPS hotspot (parameter) rule to sentinel_hotspot,
// which runs sentinel-golang's per-value limiter: lump refills per
// durationInSec with burstCount extra tokens, or its millisecond
// throttling. Sentinel's queue of 0 admits only a call whose slot has
// come, which is maxWait 1ns there (the comparison is strict).
func hotspotRule(r *flow.Rule, dur int64, throttling bool, queue int64, burst float64) {
	r.Algorithm, r.Window = flow.AlgoSentinelHotspot, sec(dur)
	if throttling {
		r.MaxWait = ms(queue)
		if queue == 0 {
			r.MaxWait = time.Nanosecond
		}
		return
	}
	r.Burst = burst
}

// goItems reads specificItems in either form sentinel-golang accepts: the
// datasource's [{"valKind","valStr","threshold"}] or a plain object.
func goItems(e *element) map[string]float64 {
	if !e.has("specificItems") {
		return nil
	}
	out := map[string]float64{}
	if strings.HasPrefix(strings.TrimSpace(string(e.raw["specificItems"])), "{") {
		obj := e.object("specificItems")
		if obj == nil {
			return nil
		}
		for _, k := range obj.keys() {
			out[k] = obj.num(k, 0)
		}
	} else {
		for _, it := range e.array("specificItems") {
			it.whole("valKind", 0, 0, 3)
			v, _ := it.scalarText("valStr")
			out[v] = float64(it.whole("threshold", 0, 0, math.MaxInt64))
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func goIsolation(e *element) ([]flow.Rule, notes) {
	e.whole("metricType", 0, 0, 0)
	return []flow.Rule{{ID: idOf(e), Resource: e.str("resource"), Algorithm: flow.AlgoConcurrency,
		Limit: float64(e.whole("threshold", 0, 0, math.MaxUint32))}}, nil
}

// goSystem maps a CpuUsage rule with the BBR strategy to the adaptive
// section's systemCPU, which is the same check (CPU above the trigger, then
// BBR's in-flight bound); the other metrics have no counterpart.
func goSystem(e *element, sys *system) ([]flow.Rule, notes) {
	var n notes
	names := []string{"load", "avgRT", "concurrency", "inboundQPS", "cpuUsage"}
	m := e.whole("metricType", 0, 0, 4)
	trigger := e.num("triggerCount", 0)
	// NoAdaptive is -1 and BBR 1 (its iota); 0, the zero value, is no
	// BBR either: sentinel-golang tests Strategy != BBR.
	bbr := e.whole("strategy", -1, -1, 1) == 1
	switch {
	case m != 4:
		return cannot("system rule (%s %s): %s", names[m], num(trigger), systemCannot)
	case !bbr:
		return cannot("system rule (cpuUsage %s, strategy %d, not BBR): refuses every inbound call above the CPU; flowgate's guard always applies BBR's in-flight bound", num(trigger), e.whole("strategy", -1, -1, 1))
	case trigger <= 0:
		return cannot("system rule (cpuUsage %s): a trigger of 0 or less is never below the CPU; flowgate's systemCPU 0 means off", num(trigger))
	}
	cpu := trigger
	if cpu > 1 {
		cpu = min(1, trigger/100)
		n.add("triggerCount %s read as percent: sentinel-golang compares it with gopsutil's process CPU (0..100 per core); systemCPU %s is the share of the CPU the process may use, so on N cores it is %s/N percent of one", num(trigger), num(cpu), num(trigger))
	} else {
		n.add("sentinel-golang v1.0.4 compares triggerCount %s with gopsutil's process CPU in percent (0..100 per core), so it trips above %s%% of one core; systemCPU %s is %s of the CPU the process may use, what such a rule means to say", num(trigger), num(trigger), num(cpu), num(cpu))
	}
	n.add("flowgate smooths the CPU it samples; sentinel-golang reads its latest sample")
	sys.cpu(cpu)
	return []flow.Rule{}, n
}
