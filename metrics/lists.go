package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgate/flowgate/flow"
)

// NameListRefusals counts the calls refused by allow and deny rules.
const NameListRefusals = "flowgate_list_refusals_total"

// Values of the reason label of flowgate_list_refusals_total: the caller
// was on a deny list, or not on an allow list.
const (
	ReasonDenied     = "denied"
	ReasonNotAllowed = "not_allowed"
)

func listRefusalsDesc() *prometheus.Desc {
	return prometheus.NewDesc(NameListRefusals,
		"Calls refused by allow and deny rules, by level (ip, user, param) and reason (denied: on a deny list; not_allowed: not on an allow list). They are also counted in flowgate_requests_total as blocked at that level.",
		[]string{"resource", "level", "reason"}, nil)
}

// collectLists sends one series per resource, level and kind of list that
// has a rule in force (so they start at 0), and any other non-zero count
// (a list since removed).
func (c *collector) collectLists(ch chan<- prometheus.Metric, s *flow.Snapshot) {
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
				ch <- constMetric(c.d.listRefusals, prometheus.CounterValue, float64(r.Denied[lv]), r.Resource, lv.String(), ReasonDenied)
			}
			if want[key{r.Resource, lv, false}] || r.NotAllowed[lv] > 0 {
				ch <- constMetric(c.d.listRefusals, prometheus.CounterValue, float64(r.NotAllowed[lv]), r.Resource, lv.String(), ReasonNotAllowed)
			}
		}
	}
}
