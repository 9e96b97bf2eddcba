package cluster

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/internal/clustertest"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// TestParamRulesAcrossEngines: a cluster param rule with items is exact
// across 4 engines sharing one Redis, value by value: the default limit,
// an item's, and values the others do not touch.
func TestParamRulesAcrossEngines(t *testing.T) {
	srv := redistest.Start(t)
	res := uniq("param")
	var es []*flow.Engine
	for range 4 {
		es = append(es, newEngine(t, newServer(t, srv.NewClient(nil)), t0, clustertest.ParamRules(res)...))
	}
	waitWindowStart(t, srv.Client(), time.Hour, 2*time.Second)
	clustertest.CheckParamRules(t, es, res)
}
