package envoyrls

import (
	"testing"
)

const valueMetricYAML = `
domain: web
descriptors:
  - key: client
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: tenant
    value_to_metric: true
    descriptors:
      - key: path
        rate_limit: {unit: minute, requests_per_unit: 5, algorithm: sliding_window}
  - key: route
    rate_limit: {unit: minute, requests_per_unit: 5}
`

// TestValueMetrics: detailed_metric counts per request value,
// value_to_metric per value of its level only, a limit without either has
// no per-value series, and past the cap values count under "other".
func TestValueMetrics(t *testing.T) {
	h := newHarness(t, valueMetricYAML, WithValueMetricCap(3))
	for _, c := range []string{"a", "a", "b", "c", "d", "e"} {
		h.ask(t, "web", 0, desc("client", c))
	}
	h.ask(t, "web", 0, desc("tenant", "t1", "path", "/x"), desc("tenant", "t1", "path", "/y"), desc("tenant", "t2", "path", "/x"))
	h.ask(t, "web", 0, desc("route", "r1"))
	v := h.svc.Stats().Values
	want := map[string]LimitStats{"client_a": {Within: 1, Over: 1}, "client_b": {Within: 1}, "client_c": {Within: 1}, OtherValue: {Within: 2}}
	if got := v["web.client"]; len(got) != len(want) {
		t.Errorf("web.client values %v, want %v", got, want)
	} else {
		for k, w := range want {
			if got[k] != w {
				t.Errorf("web.client %q: %+v, want %+v", k, got[k], w)
			}
		}
	}
	if got := v["web.tenant.path"]; len(got) != 2 || got["tenant_t1.path"].Within != 2 || got["tenant_t2.path"].Within != 1 {
		t.Errorf("web.tenant.path values %v, want tenant_t1.path 2 and tenant_t2.path 1 (the path's own value not named)", got)
	}
	if _, ok := v["web.route"]; ok {
		t.Errorf("web.route has per-value series without detailed_metric or value_to_metric: %v", v["web.route"])
	}
}
