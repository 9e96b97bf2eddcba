package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/flowgate/flowgate/flow"
)

// Calls refused by allow and deny rules, by resource, level (ip, user,
// param) and reason: the Prometheus counter and its OpenTelemetry twin
// carry the same series.
const (
	NameListRefusals = "flowgate_list_refusals_total"
	OTelListRefusals = "flowgate.list.refusals" // counter {request}: resource, level, reason
)

// AttrReason is the reason attribute of flowgate.list.refusals (the
// reason label in Prometheus): ReasonDenied or ReasonNotAllowed.
const AttrReason = attribute.Key("flowgate.reason")

// Values of the reason label of flowgate_list_refusals_total: the caller
// was on a deny list, or not on an allow list.
const (
	ReasonDenied     = "denied"
	ReasonNotAllowed = "not_allowed"
)

const listRefusalsHelp = "Calls refused by allow and deny rules, by level (ip, user, param) and reason (denied: on a deny list; not_allowed: not on an allow list). They are also counted in flowgate_requests_total as blocked at that level."

func listRefusalsDesc() *prometheus.Desc {
	return prometheus.NewDesc(NameListRefusals, listRefusalsHelp, []string{"resource", "level", "reason"}, nil)
}

// eachListRefusals calls fn with one series per resource, level and kind
// of list that has a rule in force (so they start at 0), and any other
// non-zero count (a list since removed). Levels and reasons are fixed
// sets, so the series are bounded by resources.
func eachListRefusals(s *flow.Snapshot, fn func(resource string, lv flow.Level, reason string, n uint64)) {
	type key struct {
		resource string
		level    flow.Level
		deny     bool
	}
	want := map[key]bool{}
	for i := range s.Rules {
		r := &s.Rules[i]
		if r.Algorithm == flow.AlgoAllow || r.Algorithm == flow.AlgoDeny {
			want[key{r.Resource, r.Level, r.Algorithm == flow.AlgoDeny}] = true
		}
	}
	for i := range s.Resources {
		r := &s.Resources[i]
		for lv := flow.Level(0); lv < flow.NumLevels; lv++ {
			if want[key{r.Resource, lv, true}] || r.Denied[lv] > 0 {
				fn(r.Resource, lv, ReasonDenied, r.Denied[lv])
			}
			if want[key{r.Resource, lv, false}] || r.NotAllowed[lv] > 0 {
				fn(r.Resource, lv, ReasonNotAllowed, r.NotAllowed[lv])
			}
		}
	}
}

func (c *collector) collectLists(ch chan<- prometheus.Metric, s *flow.Snapshot) {
	eachListRefusals(s, func(resource string, lv flow.Level, reason string, n uint64) {
		ch <- constMetric(c.d.listRefusals, prometheus.CounterValue, float64(n), resource, lv.String(), reason)
	})
}

func registerOTelLists(m metric.Meter) (metric.Int64ObservableCounter, error) {
	return m.Int64ObservableCounter(OTelListRefusals, metric.WithUnit("{request}"), metric.WithDescription(listRefusalsHelp))
}

func observeLists(ob metric.Observer, c metric.Int64ObservableCounter, s *flow.Snapshot) {
	eachListRefusals(s, func(resource string, lv flow.Level, reason string, n uint64) {
		ob.ObserveInt64(c, clampInt64(n), metric.WithAttributes(AttrResource.String(resource),
			AttrLevel.String(lv.String()), AttrReason.String(reason)))
	})
}
