package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/flowgate/flowgate/flow"
)

// The guards of outgoing calls (client_throttle, retry_budget; see
// docs/outbound.md): series only for those rules, so a program that guards
// no outgoing call exports none.
const (
	NameOutboundAttempts = "flowgate_outbound_attempts_total"     // counter: resource, rule, kind (first, retry)
	NameOutboundRefused  = "flowgate_outbound_refused_total"      // counter: resource, rule, algorithm
	NameThrottleProb     = "flowgate_client_throttle_probability" // gauge: resource, rule
	OTelOutboundAttempts = "flowgate.outbound.attempts"           // counter {request}: resource, rule, kind
	OTelOutboundRefused  = "flowgate.outbound.refused"            // counter {request}: resource, rule, algorithm
	OTelThrottleProb     = "flowgate.client_throttle.probability" // gauge 1: resource, rule
	attemptsHelp         = "Outgoing calls a retry_budget rule passed, by kind: first attempts (each deposits into the budget) and retries (each withdraws one)."
	outRefusedHelp       = "Outgoing calls refused locally: by a client_throttle (the backend stopped accepting) or a retry_budget (a retry beyond the budget)."
	throttleProbHelp     = "The chance a client_throttle rule refuses the next call: max(0, (requests - k*accepts)/(requests+1)) over its window."
)

func outboundDescs() (attempts, refused, prob *prometheus.Desc) {
	l := []string{"resource", "rule"}
	return prometheus.NewDesc(NameOutboundAttempts, attemptsHelp, append(l, "kind"), nil),
		prometheus.NewDesc(NameOutboundRefused, outRefusedHelp, append(l, "algorithm"), nil),
		prometheus.NewDesc(NameThrottleProb, throttleProbHelp, l, nil)
}

// eachOutbound calls fn with every outbound rule of s and its rule label.
func eachOutbound(s *flow.Snapshot, fn func(r *flow.RuleStats, o *flow.OutboundStats, rule string)) {
	for i := range s.Rules {
		if r := &s.Rules[i]; r.Outbound != nil {
			fn(r, r.Outbound, ruleLabel(r.ID, i))
		}
	}
}

func (c *collector) collectOutbound(ch chan<- prometheus.Metric, s *flow.Snapshot) {
	eachOutbound(s, func(r *flow.RuleStats, o *flow.OutboundStats, rule string) {
		ch <- constMetric(c.d.outRefused, prometheus.CounterValue, float64(o.Refused), r.Resource, rule, r.Algorithm.String())
		if r.Algorithm == flow.AlgoClientThrottle {
			ch <- constMetric(c.d.throttleProb, prometheus.GaugeValue, o.RefuseProbability, r.Resource, rule)
			return
		}
		ch <- constMetric(c.d.outAttempts, prometheus.CounterValue, float64(o.FirstAttempts), r.Resource, rule, "first")
		ch <- constMetric(c.d.outAttempts, prometheus.CounterValue, float64(o.Retries), r.Resource, rule, "retry")
	})
}

type otelOutbound struct {
	attempts, refused metric.Int64ObservableCounter
	prob              metric.Float64ObservableGauge
}

func (o *otelOutbound) register(m metric.Meter) ([]metric.Observable, error) {
	var err error
	if o.attempts, err = m.Int64ObservableCounter(OTelOutboundAttempts, metric.WithUnit("{request}"), metric.WithDescription(attemptsHelp)); err != nil {
		return nil, err
	}
	if o.refused, err = m.Int64ObservableCounter(OTelOutboundRefused, metric.WithUnit("{request}"), metric.WithDescription(outRefusedHelp)); err != nil {
		return nil, err
	}
	if o.prob, err = m.Float64ObservableGauge(OTelThrottleProb, metric.WithUnit("1"), metric.WithDescription(throttleProbHelp)); err != nil {
		return nil, err
	}
	return []metric.Observable{o.attempts, o.refused, o.prob}, nil
}

func (o *otelOutbound) observe(ob metric.Observer, s *flow.Snapshot) {
	eachOutbound(s, func(r *flow.RuleStats, st *flow.OutboundStats, rule string) {
		base := []attribute.KeyValue{AttrResource.String(r.Resource), AttrRule.String(rule)}
		ob.ObserveInt64(o.refused, clampInt64(st.Refused),
			metric.WithAttributes(append(base, attribute.String("algorithm", r.Algorithm.String()))...))
		if r.Algorithm == flow.AlgoClientThrottle {
			ob.ObserveFloat64(o.prob, st.RefuseProbability, metric.WithAttributes(base...))
			return
		}
		ob.ObserveInt64(o.attempts, clampInt64(st.FirstAttempts), metric.WithAttributes(append(base, attribute.String("kind", "first"))...))
		ob.ObserveInt64(o.attempts, clampInt64(st.Retries), metric.WithAttributes(append(base, attribute.String("kind", "retry"))...))
	})
}
