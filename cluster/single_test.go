package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// TestSingleRuleScriptMatchesGeneric: the one-rule acquire script (the
// fast path of a level with one cluster rule) decides as the generic one
// does: for every algorithm, the same calls on two fresh keys get the same
// answers, and both count the same.
func TestSingleRuleScriptMatchesGeneric(t *testing.T) {
	srv := redistest.Start(t)
	ts := newServer(t, srv.NewClient(nil), WithHeartbeat(0, 0))
	ctx := context.Background()
	for _, a := range algorithms {
		algo := a.algo
		t.Run(algo.String(), func(t *testing.T) {
			// Long windows: the microseconds between the two runs change
			// no answer.
			r := crule("r", uniq("single-"+algo.String()), algo, 5, time.Hour)
			r.Warmup = time.Hour
			r = r.WithDefaults()
			req := flow.TokenRequest{Resource: r.Resource, Level: flow.LevelUser, Tokens: 2, Rules: []*flow.Rule{&r}, Factor: 1}
			r.Level = flow.LevelUser
			p, err := ts.plan(&req)
			if err != nil {
				t.Fatal(err)
			}
			decide := func(sc *script, key string, i int) reply {
				ap := ts.args(p, key, ts.newNonce(), req.Tokens, nil, false)
				v, err := ts.evalKey(ctx, (*ap)[3].(string), sc, *ap)
				if err != nil {
					t.Fatalf("%s call %d: %v", key, i, err)
				}
				rep, err := decodeReply(v, 6)
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
			generic, single := scriptFor(mainAcquire, p.mask), scriptFor(mainAcquire1, 1<<(p.code1-1))
			if generic == single || single == nil {
				t.Fatal("no distinct one-rule script")
			}
			admitted := 0
			for i := range 5 {
				g, s := decide(generic, "generic", i), decide(single, "single", i)
				if g.allowed != s.allowed || g.refused != s.refused || g.remaining != s.remaining || (g.retry > 0) != (s.retry > 0) {
					t.Fatalf("call %d: generic %+v, one-rule %+v", i, g, s)
				}
				if g.allowed {
					admitted++
				}
			}
			if admitted == 0 || admitted == 5 {
				t.Fatalf("%d of 5 calls of 2 permits admitted at a limit of 5: the test decides nothing", admitted)
			}
		})
	}
}
