package metrics

import (
	"context"
	"errors"
	"math"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/flowgate/flowgate/flow"
)

// ScopeName is the instrumentation scope of flowgate's OpenTelemetry
// instruments: this package's import path.
const ScopeName = "github.com/flowgate/flowgate/metrics"

// OpenTelemetry instrument names, modelled on the stable
// aspnetcore.rate_limiting.* conventions.
const (
	OTelRequests          = "flowgate.requests"                     // counter {request}: resource, result, level
	OTelRequestErrors     = "flowgate.request.errors"               // counter {request}: resource
	OTelActiveRequests    = "flowgate.active_requests"              // updowncounter {request}: resource
	OTelRequestDuration   = "flowgate.request.duration"             // histogram s: resource (NewOTelProducer)
	OTelTimeInQueue       = "flowgate.request.time_in_queue"        // histogram s: resource (NewOTelProducer)
	OTelRuleLimit         = "flowgate.rule.limit"                   // gauge {request}: resource, level, rule
	OTelRuleWindow        = "flowgate.rule.window"                  // gauge s: resource, level, rule
	OTelRuleKeys          = "flowgate.rule.keys"                    // gauge {key}: resource, level, rule
	OTelAdaptiveFactor    = "flowgate.adaptive.factor"              // gauge 1
	OTelAdaptiveLimit     = "flowgate.adaptive.limit"               // gauge {request}: resource, rule (adaptive_concurrency)
	OTelAdaptiveRTT       = "flowgate.adaptive.rtt"                 // gauge s: resource, rule, estimate (adaptive_concurrency)
	OTelSystemLimit       = "flowgate.system.active_requests.limit" // gauge {request}
	OTelCPU               = "flowgate.cpu.utilization"              // gauge 1
	OTelClusterRequests   = "flowgate.cluster.requests"             // counter {request}: result
	OTelClusterFallbacks  = "flowgate.cluster.fallbacks"            // counter {request}: fallback policy
	OTelClusterDuration   = "flowgate.cluster.request.duration"     // histogram s (NewOTelProducer)
	OTelClusterBreaker    = "flowgate.cluster.breaker.open"         // gauge 1
	OTelReloadSuccessful  = "flowgate.rules.reload.successful"      // gauge 1
	OTelReloadLastSuccess = "flowgate.rules.reload.last_success"    // gauge s (Unix time)
	OTelAlertsFiring      = "flowgate.alerts.firing"                // gauge {alert}: alert, resource
	// OTelBreakerState and OTelBreakerTransitions: see breakers.go;
	// OTelShadowBlocked: shadow.go; OTelListRefusals: lists.go.
)

// Attribute keys of flowgate's OpenTelemetry instruments.
const (
	AttrResource = attribute.Key("flowgate.resource")
	AttrResult   = attribute.Key("flowgate.result")
	AttrLevel    = attribute.Key("flowgate.level")
	AttrRule     = attribute.Key("flowgate.rule")
	AttrPolicy   = attribute.Key("flowgate.fallback.policy")
	AttrAlert    = attribute.Key("flowgate.alert")
	// AttrCPUSource is on flowgate.cpu.utilization when the adaptive source
	// names what it measures (CPUSourceNamer): cgroup, process, host.
	AttrCPUSource = attribute.Key("flowgate.cpu.source")
	AttrEstimate  = attribute.Key("flowgate.rtt.estimate") // EstimateShort or EstimateLong
)

// RegisterOTel observes eng's statistics with OpenTelemetry asynchronous
// instruments on mp (otel.GetMeterProvider() when nil), under scope
// ScopeName, with one callback that reads eng.Snapshot() at each
// collection. It carries the information of NewCollector, with the same
// options and the same partition of flowgate.requests into results passed,
// waited and blocked. The OTel API has no asynchronous histogram, so the
// duration histograms come from NewOTelProducer, registered on a reader.
// unregister removes the callback; the instruments stay, reporting nothing.
func RegisterOTel(eng *flow.Engine, mp metric.MeterProvider, opts ...Option) (unregister func() error, err error) {
	if eng == nil {
		return nil, errors.New("metrics: RegisterOTel with a nil engine")
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	o := &otelObserver{eng: eng, cfg: newConfig(opts)}
	m := mp.Meter(ScopeName)
	var errs []error
	i64c := func(name, unit, desc string) metric.Int64ObservableCounter {
		x, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return x
	}
	i64g := func(name, unit, desc string) metric.Int64ObservableGauge {
		x, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return x
	}
	f64g := func(name, unit, desc string) metric.Float64ObservableGauge {
		x, err := m.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return x
	}
	o.requests = i64c(OTelRequests, "{request}",
		"Calls to Entry by result (passed at once, waited then passed, blocked) and the level that blocked them.")
	o.errors = i64c(OTelRequestErrors, "{request}", "Admitted calls that exited with an error.")
	o.active, err = m.Int64ObservableUpDownCounter(OTelActiveRequests, metric.WithUnit("{request}"),
		metric.WithDescription("Calls admitted and not yet exited."))
	errs = append(errs, err)
	o.ruleLimit = f64g(OTelRuleLimit, "{request}",
		"Effective limit of a rule now, after the adaptive factor: requests per window, or in flight for concurrency rules.")
	o.ruleWindow = f64g(OTelRuleWindow, "s", "Window a rule's limit is counted over.")
	o.ruleKeys = i64g(OTelRuleKeys, "{key}", "Users or IPs a rule tracks now (0 for global rules).")
	o.factor = f64g(OTelAdaptiveFactor, "1", "Scale applied to the limits of adaptive rules, in (0,1].")
	o.adaptiveLimit = i64g(OTelAdaptiveLimit, "{request}", "Current concurrency limit of an adaptive_concurrency rule (global level).")
	o.adaptiveRTT = f64g(OTelAdaptiveRTT, "s", "Response-time estimates of an adaptive_concurrency rule: short (last window) and long (no-queue).")
	o.systemMax = i64g(OTelSystemLimit, "{request}", "In-flight calls above which the system guard blocks; 0 when off.")
	o.clusterReqs = i64c(OTelClusterRequests, "{request}", "Requests to the cluster token server by answer.")
	o.fallbacks = i64c(OTelClusterFallbacks, "{request}", "Cluster decisions taken by a rule's fallback policy.")
	insts := []metric.Observable{o.requests, o.errors, o.active, o.ruleLimit, o.ruleWindow, o.ruleKeys,
		o.factor, o.systemMax, o.clusterReqs, o.fallbacks, o.adaptiveLimit, o.adaptiveRTT}
	bi, err := o.breakers.register(m)
	errs = append(errs, err)
	insts = append(insts, bi...)
	o.shadow, err = registerOTelShadow(m)
	errs = append(errs, err)
	insts = append(insts, o.shadow)
	o.lists, err = registerOTelLists(m)
	errs = append(errs, err)
	insts = append(insts, o.lists)
	if o.cfg.cpu != nil {
		o.cpu = f64g(OTelCPU, "1", "CPU utilisation of the CPU this process may use, as last sampled.")
		insts = append(insts, o.cpu)
	}
	if o.cfg.cluster != nil {
		o.breaker = i64g(OTelClusterBreaker, "1", "1 while the breaker in front of the token server is open.")
		insts = append(insts, o.breaker)
	}
	if o.cfg.reload != nil {
		o.reloadOK = i64g(OTelReloadSuccessful, "1", "1 if the last rule reload succeeded, else 0.")
		o.reloadTime = f64g(OTelReloadLastSuccess, "s", "Unix time of the last successful rule reload; 0 if none.")
		insts = append(insts, o.reloadOK, o.reloadTime)
	}
	if o.cfg.alerts != nil {
		o.alertsFiring = i64g(OTelAlertsFiring, "{alert}", "1 while a flowgate alert fires, 0 after it resolved.")
		insts = append(insts, o.alertsFiring)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	reg, err := m.RegisterCallback(o.observe, insts...)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}

type otelObserver struct {
	eng    *flow.Engine
	cfg    config
	alerts alertTracker
	guard  passedGuard

	requests, errors, clusterReqs, fallbacks metric.Int64ObservableCounter
	active                                   metric.Int64ObservableUpDownCounter
	ruleKeys, systemMax, breaker, reloadOK   metric.Int64ObservableGauge
	alertsFiring                             metric.Int64ObservableGauge
	ruleLimit, ruleWindow, factor, cpu       metric.Float64ObservableGauge
	adaptiveLimit                            metric.Int64ObservableGauge
	adaptiveRTT                              metric.Float64ObservableGauge
	reloadTime                               metric.Float64ObservableGauge
	breakers                                 otelBreakers
	shadow, lists                            metric.Int64ObservableCounter
}

func (o *otelObserver) observe(_ context.Context, ob metric.Observer) error {
	s := o.eng.Snapshot()
	resource := func(r *flow.ResourceStats) {
		res := AttrResource.String(r.Resource)
		global := AttrLevel.String(flow.LevelGlobal.String())
		passed := o.guard.passed(r.Resource, r.Passed)
		ob.ObserveInt64(o.requests, clampInt64(passed), metric.WithAttributes(res, AttrResult.String(ResultPassed), global))
		ob.ObserveInt64(o.requests, clampInt64(r.Waited), metric.WithAttributes(res, AttrResult.String(ResultWaited), global))
		for lv := flow.Level(0); lv < flow.NumLevels; lv++ {
			ob.ObserveInt64(o.requests, clampInt64(r.Blocked[lv]),
				metric.WithAttributes(res, AttrResult.String(ResultBlocked), AttrLevel.String(lv.String())))
		}
		ob.ObserveInt64(o.errors, clampInt64(r.Errors), metric.WithAttributes(res))
		ob.ObserveInt64(o.active, r.InFlight, metric.WithAttributes(res))
	}
	for i := range s.Resources {
		resource(&s.Resources[i])
	}
	for _, name := range idleResources(&s) {
		resource(zeroStats(name, &s))
	}
	for i := range s.Rules {
		r := &s.Rules[i]
		attrs := metric.WithAttributes(AttrResource.String(r.Resource), AttrLevel.String(r.Level.String()), AttrRule.String(ruleLabel(r.ID, i)))
		list := r.Algorithm == flow.AlgoAllow || r.Algorithm == flow.AlgoDeny // no limit, no window
		if r.Algorithm != flow.AlgoCircuitBreaker && !list {                  // a breaker has no limit
			ob.ObserveFloat64(o.ruleLimit, r.EffectiveLimit, attrs)
		}
		if !list {
			ob.ObserveFloat64(o.ruleWindow, r.Window.Seconds(), attrs)
		}
		ob.ObserveInt64(o.ruleKeys, int64(r.Keys), attrs)
		if a := r.AdaptiveConcurrency; a != nil {
			res, rule := AttrResource.String(r.Resource), AttrRule.String(ruleLabel(r.ID, i))
			ob.ObserveInt64(o.adaptiveLimit, a.Limit, metric.WithAttributes(res, rule))
			ob.ObserveFloat64(o.adaptiveRTT, a.ShortRTT.Seconds(), metric.WithAttributes(res, rule, AttrEstimate.String(EstimateShort)))
			ob.ObserveFloat64(o.adaptiveRTT, a.LongRTT.Seconds(), metric.WithAttributes(res, rule, AttrEstimate.String(EstimateLong)))
		}
	}
	o.breakers.observe(ob, &s)
	observeShadow(ob, o.shadow, &s)
	observeLists(ob, o.lists, &s)
	ob.ObserveFloat64(o.factor, s.AdaptiveFactor)
	ob.ObserveInt64(o.systemMax, s.SystemLimit)
	for _, k := range labelKeys(clusterResults, s.Cluster.Requests) {
		ob.ObserveInt64(o.clusterReqs, clampInt64(s.Cluster.Requests[k]), metric.WithAttributes(AttrResult.String(k)))
	}
	for _, k := range labelKeys(fallbackPolicies, s.Cluster.Fallbacks) {
		ob.ObserveInt64(o.fallbacks, clampInt64(s.Cluster.Fallbacks[k]), metric.WithAttributes(AttrPolicy.String(k)))
	}
	if o.cfg.cpu != nil {
		if v := o.cfg.cpu(); !math.IsNaN(v) {
			if src := o.cfg.cpuSource; src != "" {
				ob.ObserveFloat64(o.cpu, v, metric.WithAttributes(AttrCPUSource.String(src)))
			} else {
				ob.ObserveFloat64(o.cpu, v)
			}
		}
	}
	if o.cfg.cluster != nil {
		ob.ObserveInt64(o.breaker, int64(boolValue(o.cfg.cluster().BreakerOpen)))
	}
	if o.cfg.reload != nil {
		st := o.cfg.reload.ReloadStatus()
		ob.ObserveInt64(o.reloadOK, int64(boolValue(st.Successful)))
		ob.ObserveFloat64(o.reloadTime, unixSeconds(st.LastSuccess))
	}
	if o.cfg.alerts != nil {
		for a, firing := range o.alerts.states(o.cfg.alerts) {
			ob.ObserveInt64(o.alertsFiring, int64(boolValue(firing)),
				metric.WithAttributes(AttrAlert.String(a.Alert), AttrResource.String(a.Resource)))
		}
	}
	return nil
}

// clampInt64 converts a counter for an Int64 instrument; a uint64 counter
// past MaxInt64 (never, in practice) saturates rather than going negative.
func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
