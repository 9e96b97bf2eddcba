package flow

import (
	"fmt"
	"testing"
	"time"
)

// TestSingleRulePathMatchesGeneral: a resource with one global rate rule
// takes Entry's short path; the same rule beside a user rule that does not
// apply (no WithUser) takes the general one. Both decide, report and count
// the same, for every algorithm the short path serves.
func TestSingleRulePathMatchesGeneral(t *testing.T) {
	for _, a := range Algorithms() {
		if a == AlgoConcurrency || a == AlgoCircuitBreaker || a == AlgoAdaptiveConcurrency || a.isList() {
			continue
		}
		r := Rule{ID: "g", Algorithm: a, Limit: 5, Window: time.Second}
		if a == AlgoWarmUp || a == AlgoSentinelWarmUp {
			r.Warmup = time.Second
		}
		short, general := r, r
		short.Resource, general.Resource = "short", "general"
		general.ID = "g2"
		e, clk := newTestEngine(t, short, general,
			Rule{ID: "u", Resource: "general", Level: LevelUser, Algorithm: AlgoFixedWindow, Limit: 1e6})
		if rs := e.rules.Load(); rs.byResource["short"].single == nil || rs.byResource["general"].single != nil {
			t.Fatalf("%v: the short path is not taken where expected", a)
		}
		passed, refused := 0, 0
		for i := range 40 {
			ps, errS := e.Entry("short")
			pg, errG := e.Entry("general")
			if (errS == nil) != (errG == nil) {
				t.Fatalf("%v call %d: short %v, general %v", a, i, errS, errG)
			}
			if errS != nil {
				refused++
				bs, bg := *errS.(*BlockError), *errG.(*BlockError)
				bs.Resource, bg.Resource, bg.RuleID = "", "", "g"
				if bs != bg {
					t.Fatalf("%v call %d: short %+v, general %+v", a, i, bs, bg)
				}
			} else {
				passed++
				qs, _ := ps.Quota()
				qg, _ := pg.Quota()
				qg.RuleID = "g"
				if qs != qg {
					t.Fatalf("%v call %d: quota short %+v, general %+v", a, i, qs, qg)
				}
				clk.Advance(time.Millisecond)
				ps.Exit()
				pg.Exit()
			}
			clk.Advance(time.Duration(i%7) * 30 * time.Millisecond)
		}
		if passed == 0 || refused == 0 {
			t.Fatalf("%v: %d passed, %d refused: the sequence must show both", a, passed, refused)
		}
		snap := e.Snapshot()
		s, g := snap.Resources[1], snap.Resources[0] // sorted by name
		s.Resource, g.Resource = "", ""
		if fmt.Sprint(s) != fmt.Sprint(g) {
			t.Fatalf("%v: stats short %+v, general %+v", a, s, g)
		}
	}
}
