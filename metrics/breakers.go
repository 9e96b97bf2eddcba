package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/flowgate/flowgate/flow"
)

// Circuit breaker metrics: one series per breaker rule (never per key, so
// a per-user breaker adds no label values). flowgate_breaker_state is the
// rule's flow.BreakerStats.State: 0 closed, 1 open, 2 half-open; a user or
// ip rule reads 1 while any key's breaker is open.
const (
	NameBreakerState       = "flowgate_breaker_state"
	NameBreakerTransitions = "flowgate_breaker_transitions_total"

	OTelBreakerState       = "flowgate.breaker.state"       // gauge 1: resource, rule
	OTelBreakerTransitions = "flowgate.breaker.transitions" // counter {transition}: resource, rule, to
)

// AttrTo is the state a transition went to.
const AttrTo = attribute.Key("flowgate.breaker.to")

// breakerStates are the values of the "to" label, every one exported from
// the start.
var breakerStates = []flow.BreakerState{flow.BreakerClosed, flow.BreakerOpen, flow.BreakerHalfOpen}

func breakerDescs() (state, transitions *prometheus.Desc) {
	return prometheus.NewDesc(NameBreakerState,
			"State of a circuit breaker rule: 0 closed, 1 open, 2 half-open (a user or ip rule: 1 while any key is open, else 2 while any is half-open).",
			[]string{"resource", "rule"}, nil),
		prometheus.NewDesc(NameBreakerTransitions,
			"Circuit breaker state changes by the state entered (all keys of a user or ip rule together).",
			[]string{"resource", "rule", "to"}, nil)
}

// eachBreaker calls fn with every breaker of s and its rule label.
func eachBreaker(s *flow.Snapshot, fn func(b *flow.BreakerStats, rule string)) {
	j := 0
	for i := range s.Rules {
		if s.Rules[i].Algorithm != flow.AlgoCircuitBreaker || j >= len(s.Breakers) {
			continue
		}
		fn(&s.Breakers[j], ruleLabel(s.Rules[i].ID, i))
		j++
	}
}

func (c *collector) collectBreakers(ch chan<- prometheus.Metric, s *flow.Snapshot) {
	eachBreaker(s, func(b *flow.BreakerStats, rule string) {
		ch <- constMetric(c.d.breakerState, prometheus.GaugeValue, float64(b.State), b.Resource, rule)
		for _, to := range breakerStates {
			ch <- constMetric(c.d.breakerMoves, prometheus.CounterValue, float64(b.Transitions[to]), b.Resource, rule, to.String())
		}
	})
}

type otelBreakers struct {
	state metric.Int64ObservableGauge
	moves metric.Int64ObservableCounter
}

func (o *otelBreakers) register(m metric.Meter) (insts []metric.Observable, err error) {
	if o.state, err = m.Int64ObservableGauge(OTelBreakerState, metric.WithUnit("1"),
		metric.WithDescription("State of a circuit breaker rule: 0 closed, 1 open, 2 half-open.")); err != nil {
		return nil, err
	}
	if o.moves, err = m.Int64ObservableCounter(OTelBreakerTransitions, metric.WithUnit("{transition}"),
		metric.WithDescription("Circuit breaker state changes by the state entered.")); err != nil {
		return nil, err
	}
	return []metric.Observable{o.state, o.moves}, nil
}

func (o *otelBreakers) observe(ob metric.Observer, s *flow.Snapshot) {
	eachBreaker(s, func(b *flow.BreakerStats, rule string) {
		res, r := AttrResource.String(b.Resource), AttrRule.String(rule)
		ob.ObserveInt64(o.state, int64(b.State), metric.WithAttributes(res, r))
		for _, to := range breakerStates {
			ob.ObserveInt64(o.moves, clampInt64(b.Transitions[to]), metric.WithAttributes(res, r, AttrTo.String(to.String())))
		}
	})
}
