package flow

import (
	"fmt"
	"testing"
	"time"
	"unsafe"
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
		forceGeneral(t, e, "general")
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

// TestLookupByAddress: the rules of a resource are found by the address of
// its name first (ruleSet.recently), but the name is compared too: a
// caller that reuses one buffer for different names (unsafe.String over a
// reused []byte, as some HTTP frameworks do) gets each name's own rules.
func TestLookupByAddress(t *testing.T) {
	e, _ := newTestEngine(t,
		Rule{ID: "a", Resource: "aa", Algorithm: AlgoFixedWindow, Limit: 1, Window: time.Hour},
		Rule{ID: "b", Resource: "bb", Algorithm: AlgoFixedWindow, Limit: 1, Window: time.Hour},
	)
	buf := []byte("aa")
	name := unsafe.String(&buf[0], len(buf)) // one address, two contents
	if got := try(t, e, name); got != "" {
		t.Fatalf("aa first: refused by %q", got)
	}
	copy(buf, "bb")
	if got := try(t, e, name); got != "" {
		t.Fatalf("bb first (same address as aa): refused by %q, want a pass on b's rule", got)
	}
	if got := try(t, e, name); got != "b" {
		t.Fatalf("bb second: got %q, want refused by b", got)
	}
	copy(buf, "cc") // no rule: passes, whatever the slot holds
	if got := try(t, e, name); got != "" {
		t.Fatalf("cc: refused by %q", got)
	}
	if got := try(t, e, "aa"); got != "a" {
		t.Fatalf("aa second: got %q, want refused by a", got)
	}
}

// TestLookupSlotTakenBack: when names built per call have filled the
// recent slots, a name that comes again and again still gets its slot back
// (lookupMap takes a slot over on some misses), and every call finds its
// own rules meanwhile.
func TestLookupSlotTakenBack(t *testing.T) {
	var rules []Rule
	for i := range 200 {
		rules = append(rules, Rule{ID: fmt.Sprint("r", i), Resource: fmt.Sprint("res-", i), Algorithm: AlgoTokenBucket, Limit: 1e9})
	}
	rules = append(rules, Rule{ID: "hot", Resource: "hot", Algorithm: AlgoTokenBucket, Limit: 1e9})
	e, _ := newTestEngine(t, rules...)
	rs := e.rules.Load()
	for i := range 200 { // a new string per call: fills the slots
		if got := try(t, e, fmt.Sprint("res-", i)); got != "" {
			t.Fatalf("res-%d: refused by %q", i, got)
		}
	}
	hot := "hot"
	for range 1000 {
		if got := try(t, e, hot); got != "" {
			t.Fatalf("hot: refused by %q", got)
		}
	}
	if rr := rs.recently(hot); rr == nil || rr.name != "hot" {
		t.Fatalf("after 1000 calls the hot name has no slot (got %v)", rr)
	}
}
