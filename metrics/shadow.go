package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/metric"

	"github.com/flowgate/flowgate/flow"
)

// Shadow rules (flow.Rule.Shadow) refuse nothing; what they would have
// refused is counted here, one series per rule in shadow (and per rule
// flipped to enforcing whose count is not zero, so the series does not
// vanish mid-comparison). Calls a shadow rule would have refused still
// count as passed in flowgate_requests_total.
const (
	NameShadowBlocked = "flowgate_shadow_blocked_total"
	OTelShadowBlocked = "flowgate.shadow.blocked" // counter {request}: resource, rule, level
)

func shadowDesc() *prometheus.Desc {
	return prometheus.NewDesc(NameShadowBlocked,
		"Calls a rule in shadow would have refused; they were let through.",
		[]string{"resource", "rule", "level"}, nil)
}

// eachShadow calls fn with every rule of s that is in shadow or has
// counted a would-be refusal, and its rule label.
func eachShadow(s *flow.Snapshot, fn func(r *flow.RuleStats, rule string)) {
	for i := range s.Rules {
		if r := &s.Rules[i]; r.Shadow || r.ShadowBlocked > 0 {
			fn(r, ruleLabel(r.ID, i))
		}
	}
}

func (c *collector) collectShadow(ch chan<- prometheus.Metric, s *flow.Snapshot) {
	eachShadow(s, func(r *flow.RuleStats, rule string) {
		ch <- constMetric(c.d.shadowBlocked, prometheus.CounterValue, float64(r.ShadowBlocked), r.Resource, rule, r.Level.String())
	})
}

func registerOTelShadow(m metric.Meter) (metric.Int64ObservableCounter, error) {
	return m.Int64ObservableCounter(OTelShadowBlocked, metric.WithUnit("{request}"),
		metric.WithDescription("Calls a rule in shadow would have refused; they were let through."))
}

func observeShadow(ob metric.Observer, c metric.Int64ObservableCounter, s *flow.Snapshot) {
	eachShadow(s, func(r *flow.RuleStats, rule string) {
		ob.ObserveInt64(c, clampInt64(r.ShadowBlocked), metric.WithAttributes(AttrResource.String(r.Resource),
			AttrRule.String(rule), AttrLevel.String(r.Level.String())))
	})
}
