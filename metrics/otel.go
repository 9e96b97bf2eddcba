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
	insts, err := o.createInstruments(m)
	if err != nil {
		return nil, err
	}
	reg, err := m.RegisterCallback(o.observe, insts...)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}

// createInstruments creates the instruments o observes on m: those every
// engine has, then one per optional source the options gave. It returns
// them all for RegisterCallback, or every creation error at once.
func (o *otelObserver) createInstruments(m metric.Meter) ([]metric.Observable, error) {
	mk := &otelMaker{m: m}
	o.requests = mk.counter(OTelRequests, "{request}",
		"Calls to Entry by result (passed at once, waited then passed, blocked) and the level that blocked them.")
	o.errors = mk.counter(OTelRequestErrors, "{request}", "Admitted calls that exited with an error.")
	o.active = mk.upDownCounter(OTelActiveRequests, "{request}", "Calls admitted and not yet exited.")
	o.ruleLimit = mk.floatGauge(OTelRuleLimit, "{request}",
		"Effective limit of a rule now, after the adaptive factor: requests per window, or in flight for concurrency rules.")
	o.ruleWindow = mk.floatGauge(OTelRuleWindow, "s", "Window a rule's limit is counted over.")
	o.ruleKeys = mk.gauge(OTelRuleKeys, "{key}", "Users or IPs a rule tracks now (0 for global rules).")
	o.factor = mk.floatGauge(OTelAdaptiveFactor, "1", "Scale applied to the limits of adaptive rules: below 1 under a cut, above 1 under the idle-CPU boost.")
	o.adaptiveLimit = mk.gauge(OTelAdaptiveLimit, "{request}", "Current concurrency limit of an adaptive_concurrency rule (global level).")
	o.adaptiveRTT = mk.floatGauge(OTelAdaptiveRTT, "s", "Response-time estimates of an adaptive_concurrency rule: short (last window) and long (no-queue).")
	o.systemMax = mk.gauge(OTelSystemLimit, "{request}", "In-flight calls above which the system guard blocks; 0 when off.")
	o.clusterReqs = mk.counter(OTelClusterRequests, "{request}", "Requests to the cluster token server by answer.")
	o.fallbacks = mk.counter(OTelClusterFallbacks, "{request}", "Cluster decisions taken by a rule's fallback policy.")
	bi, err := o.breakers.register(m)
	mk.keep(err, bi...)
	o.shadow, err = registerOTelShadow(m)
	mk.keep(err, o.shadow)
	o.lists, err = registerOTelLists(m)
	mk.keep(err, o.lists)
	o.cost, o.costOwed, err = registerOTelCost(m)
	mk.keep(err, o.cost, o.costOwed)
	oi, err := o.outbound.register(m)
	mk.keep(err, oi...)
	if o.cfg.cpu != nil {
		o.cpu = mk.floatGauge(OTelCPU, "1", "CPU utilisation of the CPU this process may use, as last sampled.")
	}
	if o.cfg.cluster != nil {
		o.breaker = mk.gauge(OTelClusterBreaker, "1", "1 while the breaker in front of the token server is open.")
	}
	if o.cfg.reload != nil {
		o.reloadOK = mk.gauge(OTelReloadSuccessful, "1", "1 if the last rule reload succeeded, else 0.")
		o.reloadTime = mk.floatGauge(OTelReloadLastSuccess, "s", "Unix time of the last successful rule reload; 0 if none.")
	}
	if o.cfg.alerts != nil {
		o.alertsFiring = mk.gauge(OTelAlertsFiring, "{alert}", "1 while a flowgate alert fires, 0 after it resolved.")
	}
	return mk.insts, errors.Join(mk.errs...)
}

// otelMaker creates asynchronous instruments on one meter, keeping each
// for the callback's registration and each error, so that a failed
// registration reports all of them.
type otelMaker struct {
	m     metric.Meter
	insts []metric.Observable
	errs  []error
}

func (mk *otelMaker) keep(err error, insts ...metric.Observable) {
	mk.insts = append(mk.insts, insts...)
	mk.errs = append(mk.errs, err)
}

func (mk *otelMaker) counter(name, unit, desc string) metric.Int64ObservableCounter {
	x, err := mk.m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	mk.keep(err, x)
	return x
}

func (mk *otelMaker) upDownCounter(name, unit, desc string) metric.Int64ObservableUpDownCounter {
	x, err := mk.m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	mk.keep(err, x)
	return x
}

func (mk *otelMaker) gauge(name, unit, desc string) metric.Int64ObservableGauge {
	x, err := mk.m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	mk.keep(err, x)
	return x
}

func (mk *otelMaker) floatGauge(name, unit, desc string) metric.Float64ObservableGauge {
	x, err := mk.m.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	mk.keep(err, x)
	return x
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
	outbound                                 otelOutbound
	shadow, lists, cost                      metric.Int64ObservableCounter
	costOwed                                 metric.Float64ObservableGauge
}

func (o *otelObserver) observe(_ context.Context, ob metric.Observer) error {
	s := o.eng.Snapshot()
	for i := range s.Resources {
		o.observeResource(ob, &s.Resources[i])
	}
	// A resource with rules but no traffic yet still gets its zero series.
	for _, name := range idleResources(&s) {
		o.observeResource(ob, zeroStats(name, &s))
	}
	for i := range s.Rules {
		o.observeRule(ob, &s.Rules[i], i)
	}
	o.breakers.observe(ob, &s)
	observeShadow(ob, o.shadow, &s)
	observeLists(ob, o.lists, &s)
	observeCost(ob, o.cost, o.costOwed, &s)
	o.outbound.observe(ob, &s)
	ob.ObserveFloat64(o.factor, s.AdaptiveFactor)
	ob.ObserveInt64(o.systemMax, s.SystemLimit)
	for _, k := range labelKeys(clusterResults, s.Cluster.Requests) {
		ob.ObserveInt64(o.clusterReqs, clampInt64(s.Cluster.Requests[k]), metric.WithAttributes(AttrResult.String(k)))
	}
	for _, k := range labelKeys(fallbackPolicies, s.Cluster.Fallbacks) {
		ob.ObserveInt64(o.fallbacks, clampInt64(s.Cluster.Fallbacks[k]), metric.WithAttributes(AttrPolicy.String(k)))
	}
	o.observeSources(ob)
	return nil
}

// observeResource observes one resource's request counters and calls in
// flight.
func (o *otelObserver) observeResource(ob metric.Observer, r *flow.ResourceStats) {
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

// observeRule observes the gauges of the i-th rule in force.
func (o *otelObserver) observeRule(ob metric.Observer, r *flow.RuleStats, i int) {
	res, rule := AttrResource.String(r.Resource), AttrRule.String(ruleLabel(r.ID, i))
	attrs := metric.WithAttributes(res, AttrLevel.String(r.Level.String()), rule)
	hasLimit, hasWindow := ruleGauges(r)
	if hasLimit {
		ob.ObserveFloat64(o.ruleLimit, r.EffectiveLimit, attrs)
	}
	if hasWindow {
		ob.ObserveFloat64(o.ruleWindow, r.Window.Seconds(), attrs)
	}
	ob.ObserveInt64(o.ruleKeys, int64(r.Keys), attrs)
	if a := r.AdaptiveConcurrency; a != nil {
		ob.ObserveInt64(o.adaptiveLimit, a.Limit, metric.WithAttributes(res, rule))
		ob.ObserveFloat64(o.adaptiveRTT, a.ShortRTT.Seconds(), metric.WithAttributes(res, rule, AttrEstimate.String(EstimateShort)))
		ob.ObserveFloat64(o.adaptiveRTT, a.LongRTT.Seconds(), metric.WithAttributes(res, rule, AttrEstimate.String(EstimateLong)))
	}
}

// observeSources observes what the optional sources report; a source not
// given observes nothing.
func (o *otelObserver) observeSources(ob metric.Observer) {
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
}

// clampInt64 converts a counter for an Int64 instrument; a uint64 counter
// past MaxInt64 (never, in practice) saturates rather than going negative.
func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
