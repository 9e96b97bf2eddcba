package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/flowgate/flowgate/flow"
)

// Cost settled at Exit (flow.WithActualCost): series only for the rules
// that settled a call, so a program that never settles exports none.
const (
	NameCost      = "flowgate_cost_total" // counter: resource, rule, level, kind
	NameCostRatio = "flowgate_cost_ratio" // histogram of actual ÷ estimated: resource, rule, level
	NameCostOwed  = "flowgate_cost_owed"  // gauge: resource, rule, level
	OTelCost      = "flowgate.cost"       // counter {permit}: resource, rule, level, kind
	OTelCostOwed  = "flowgate.cost.owed"  // gauge {permit}: resource, rule, level
	costKindLabel = "kind"                // estimated, actual, charged, refunded, forgiven
	costHelp      = "Cost of the calls settled at Exit, by kind: estimated (reserved at Entry), actual, charged beyond the estimates, refunded, forgiven (beyond maxDebt, or after the call's window closed)."
)

func costDescs() (total, ratio, owed *prometheus.Desc) {
	l := []string{"resource", "rule", "level"}
	return prometheus.NewDesc(NameCost, costHelp, append(l, costKindLabel), nil),
		prometheus.NewDesc(NameCostRatio, "Actual cost ÷ the estimate reserved at Entry, of the calls settled at Exit.", l, nil),
		prometheus.NewDesc(NameCostOwed, "What a global rule's limiter owes now, in permits, from settlements that cost more than the limit had left.", l, nil)
}

// costKinds are the kinds of flowgate_cost_total, with their counts.
func costKinds(c *flow.CostStats) [5]struct {
	kind string
	n    uint64
} {
	return [5]struct {
		kind string
		n    uint64
	}{{"estimated", c.Estimated}, {"actual", c.Actual}, {"charged", c.Charged}, {"refunded", c.Refunded}, {"forgiven", c.Forgave}}
}

// eachSettling calls fn with every rule of s that settled a call.
func eachSettling(s *flow.Snapshot, fn func(r *flow.RuleStats, rule string)) {
	for i := range s.Rules {
		if r := &s.Rules[i]; r.Cost.Settled > 0 {
			fn(r, ruleLabel(r.ID, i))
		}
	}
}

func (c *collector) collectCost(ch chan<- prometheus.Metric, s *flow.Snapshot) {
	eachSettling(s, func(r *flow.RuleStats, rule string) {
		lv := r.Level.String()
		for _, k := range costKinds(&r.Cost) {
			ch <- constMetric(c.d.cost, prometheus.CounterValue, float64(k.n), r.Resource, rule, lv, k.kind)
		}
		buckets := make(map[float64]uint64, len(flow.CostRatioBounds))
		var cum uint64
		for i, b := range flow.CostRatioBounds {
			cum += r.Cost.Ratio[i]
			buckets[b] = cum
		}
		ch <- prometheus.MustNewConstHistogram(c.d.costRatio, r.Cost.Settled, r.Cost.RatioSum, buckets, r.Resource, rule, lv)
		ch <- constMetric(c.d.costOwed, prometheus.GaugeValue, r.Owed, r.Resource, rule, lv)
	})
}

func registerOTelCost(m metric.Meter) (metric.Int64ObservableCounter, metric.Float64ObservableGauge, error) {
	total, err := m.Int64ObservableCounter(OTelCost, metric.WithUnit("{permit}"), metric.WithDescription(costHelp))
	if err != nil {
		return nil, nil, err
	}
	owed, err := m.Float64ObservableGauge(OTelCostOwed, metric.WithUnit("{permit}"),
		metric.WithDescription("What a global rule's limiter owes now, in permits, from settlements that cost more than the limit had left."))
	return total, owed, err
}

func observeCost(ob metric.Observer, total metric.Int64ObservableCounter, owed metric.Float64ObservableGauge, s *flow.Snapshot) {
	eachSettling(s, func(r *flow.RuleStats, rule string) {
		attrs := []attribute.KeyValue{AttrResource.String(r.Resource), AttrRule.String(rule), AttrLevel.String(r.Level.String())}
		for _, k := range costKinds(&r.Cost) {
			ob.ObserveInt64(total, clampInt64(k.n), metric.WithAttributes(append(attrs[:3:3], attribute.String(costKindLabel, k.kind))...))
		}
		ob.ObserveFloat64(owed, r.Owed, metric.WithAttributes(attrs...))
	})
}
