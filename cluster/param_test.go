package cluster

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/redistest"
)

// TestParamRulesAcrossEngines: a cluster param rule with items is exact
// across 4 engines sharing one Redis, value by value: the default limit,
// an item's, and values the others do not touch.
func TestParamRulesAcrossEngines(t *testing.T) {
	srv := redistest.Start(t)
	res := uniq("param")
	r := crule("per-tenant", res, flow.AlgoFixedWindow, 20, time.Hour)
	r.Level, r.Param = flow.LevelParam, "tenant"
	r.Items = map[string]float64{"vip": 60, "trial": 4}
	other := crule("", res, flow.AlgoFixedWindow, 8, time.Hour) // no id: kept apart by its param name
	other.Level, other.Param = flow.LevelParam, "host"
	var es []*flow.Engine
	for range 4 {
		es = append(es, newEngine(t, newServer(t, srv.NewClient(nil)), t0, r, other))
	}
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
	// The host rule counts per host on its own keys; without a tenant the
	// tenant rule does not apply.
	passed, _ := hammer(t, es, 3, res, 10, nil, flow.WithParam("host", "acme"))
	if passed != 8 {
		t.Errorf("host %q: %d passed, want exactly 8", "acme", passed)
	}
	// Refusals at the param level name the rule.
	_, err := es[0].Entry(res, flow.WithParam("tenant", "vip"))
	be, ok := err.(*flow.BlockError)
	if !ok || be.Level != flow.LevelParam || be.RuleID != "per-tenant" || be.Reason != flow.ReasonClusterLimited {
		t.Fatalf("got %v, want a cluster refusal at the param level by per-tenant", err)
	}
}
