package clustertest

import (
	"errors"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// ParamRules are the cluster param rules of the param tests on res: a
// per-tenant fixed window of 20 an hour with items (vip 60, trial 4), and
// an id-less per-host one of 8, kept apart from it by its param name.
func ParamRules(res string) []flow.Rule {
	r := Rule("per-tenant", res, flow.AlgoFixedWindow, 20, time.Hour)
	r.Level, r.Param = flow.LevelParam, "tenant"
	r.Items = map[string]float64{"vip": 60, "trial": 4}
	other := Rule("", res, flow.AlgoFixedWindow, 8, time.Hour)
	other.Level, other.Param = flow.LevelParam, "host"
	return []flow.Rule{r, other}
}

// CheckParamRules hammers engines holding ParamRules(res), in one window
// (the caller waits for its start), and checks the limits exact value by
// value: the default limit, each item's, values the others did not touch,
// the host rule on keys of its own, and the refusal naming the rule.
func CheckParamRules(t testing.TB, es []*flow.Engine, res string) {
	t.Helper()
	for _, c := range []struct {
		tenant string
		want   int64
	}{{"acme", 20}, {"vip", 60}, {"trial", 4}, {"globex", 20}} {
		passed, _ := Hammer(t, es, 3, res, 30, nil, flow.WithParam("tenant", c.tenant))
		if passed != c.want {
			t.Errorf("tenant %q: %d passed across %d engines, want exactly %d", c.tenant, passed, len(es), c.want)
		}
	}
	// The host rule counts per host on its own keys (the tenant "acme"
	// spent above is another parameter's value); without a tenant the
	// tenant rule does not apply.
	passed, _ := Hammer(t, es, 3, res, 10, nil, flow.WithParam("host", "acme"))
	if passed != 8 {
		t.Errorf("host %q: %d passed, want exactly 8", "acme", passed)
	}
	_, err := es[0].Entry(res, flow.WithParam("tenant", "vip"))
	var be *flow.BlockError
	if !errors.As(err, &be) || be.Level != flow.LevelParam || be.RuleID != "per-tenant" || be.Reason != flow.ReasonClusterLimited {
		t.Fatalf("got %v, want a cluster refusal at the param level by per-tenant", err)
	}
}
