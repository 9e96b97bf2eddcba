package remote

import (
	"errors"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/redistest"
)

// TestParamRulesThroughReplicas is cluster's TestParamRulesAcrossEngines
// through the token service: 4 engines, each with its own client of two
// serve replicas on one real Redis, share a param rule with items exactly,
// value by value. The rules' fallback is deny and the hammer fails on an
// unavailable refusal, so every decision was the replicas'.
func TestParamRulesThroughReplicas(t *testing.T) {
	srv := redistest.Start(t)
	_, addrs := redisReplicas(t, srv, 2)
	res := uniq("remote-param")
	r := crule("per-tenant", res, flow.AlgoFixedWindow, 20, time.Hour)
	r.Level, r.Param = flow.LevelParam, "tenant"
	r.Items = map[string]float64{"vip": 60, "trial": 4}
	other := crule("", res, flow.AlgoFixedWindow, 8, time.Hour) // no id: kept apart by its param name
	other.Level, other.Param = flow.LevelParam, "host"
	es, cs := remoteEngines(t, addrs, 4, r, other)
	waitWindowStart(t, srv.Client(), time.Hour, 2*time.Second)
	for _, c := range []struct {
		tenant string
		want   int64
	}{{"acme", 20}, {"vip", 60}, {"trial", 4}, {"globex", 20}} {
		passed, _ := hammer(t, es, 3, res, 30, nil, flow.WithParam("tenant", c.tenant))
		if passed != c.want {
			t.Errorf("tenant %q: %d passed across 4 engines, want exactly %d", c.tenant, passed, c.want)
		}
	}
	// The host rule counts per host on its own keys (the tenant "acme"
	// spent above is another parameter's value); without a tenant the
	// tenant rule does not apply.
	passed, _ := hammer(t, es, 3, res, 10, nil, flow.WithParam("host", "acme"))
	if passed != 8 {
		t.Errorf("host %q: %d passed, want exactly 8", "acme", passed)
	}
	_, err := es[0].Entry(res, flow.WithParam("tenant", "vip"))
	var be *flow.BlockError
	if !errors.As(err, &be) || be.Level != flow.LevelParam || be.RuleID != "per-tenant" || be.Reason != flow.ReasonClusterLimited {
		t.Fatalf("got %v, want a cluster refusal at the param level by per-tenant", err)
	}
	for i, c := range cs {
		if st := c.Stats(); st.Passed == 0 || st.Blocked == 0 || st.Errors != 0 {
			t.Errorf("client %d: %+v, want decisions both ways and no errors", i, st)
		}
	}
}
