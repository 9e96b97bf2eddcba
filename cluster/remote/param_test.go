package remote

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/internal/clustertest"
	"github.com/flowgate/flowgate/internal/testing/redistest"
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
	es, cs := remoteEngines(t, addrs, 4, clustertest.ParamRules(res)...)
	waitWindowStart(t, srv.Client(), time.Hour, 2*time.Second)
	clustertest.CheckParamRules(t, es, res)
	for i, c := range cs {
		if st := c.Stats(); st.Passed == 0 || st.Blocked == 0 || st.Errors != 0 {
			t.Errorf("client %d: %+v, want decisions both ways and no errors", i, st)
		}
	}
}
