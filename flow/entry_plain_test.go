package flow

import (
	"fmt"
	"testing"
	"time"
)

// forceGeneral makes resource's calls take admit's general path: for tests
// that compare it with a short one. Before any call only.
func forceGeneral(t *testing.T, e *Engine, resource string) {
	t.Helper()
	rr := e.rules.Load().byResource[resource]
	if rr == nil {
		t.Fatalf("no rules for %q", resource)
	}
	rr.plain = nil
}

// TestPlainPathMatchesGeneral: a resource whose rules are all local rate
// rules at the ip, user and global levels takes the plain path
// (decidePlain); the same rules on a resource forced the general way
// decide, report, refund and count the same, call for call, for every
// rate algorithm at the user level, with a shadow rule among them too.
func TestPlainPathMatchesGeneral(t *testing.T) {
	for _, a := range Algorithms() {
		if a == AlgoConcurrency || a == AlgoCircuitBreaker || a == AlgoAdaptiveConcurrency || a.isList() {
			continue
		}
		for _, shadowIP := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/shadow-ip=%v", a, shadowIP), func(t *testing.T) {
				plainVsGeneral(t, a, shadowIP)
			})
		}
	}
}

func plainVsGeneral(t *testing.T, a Algorithm, shadowIP bool) {
	user := Rule{ID: "u", Level: LevelUser, Algorithm: a, Limit: 4, Window: time.Second}
	if a == AlgoWarmUp || a == AlgoSentinelWarmUp {
		user.Warmup = time.Second
	}
	ip := Rule{ID: "i", Level: LevelIP, Algorithm: AlgoTokenBucket, Limit: 3, Window: time.Second, Shadow: shadowIP}
	global := Rule{ID: "g", Algorithm: AlgoFixedWindow, Limit: 9, Window: time.Second}
	var rules []Rule
	for _, res := range []string{"general", "plain"} {
		for _, r := range []Rule{ip, user, global} {
			r.Resource, r.ID = res, res+"-"+r.ID
			rules = append(rules, r)
		}
	}
	e, clk := newTestEngine(t, rules...)
	if rr := e.rules.Load().byResource["plain"]; len(rr.plain) != 3 {
		t.Fatalf("plain path not taken: %d rules on it", len(rr.plain))
	}
	forceGeneral(t, e, "general")
	passed, refused := 0, 0
	for i := range 120 {
		opts := []EntryOption{WithUser(fmt.Sprint("u", i%3)), WithIP(fmt.Sprint("ip", i%2))}
		if i%11 == 0 {
			opts = opts[:1] // no ip: the ip rule does not apply
		}
		pp, errP := e.Entry("plain", opts...)
		pg, errG := e.Entry("general", opts...)
		if (errP == nil) != (errG == nil) {
			t.Fatalf("call %d: plain %v, general %v", i, errP, errG)
		}
		if errP != nil {
			refused++
			bp, bg := *errP.(*BlockError), *errG.(*BlockError)
			bp.Resource, bg.Resource = "", ""
			bp.RuleID = bp.RuleID[len("plain-"):]
			bg.RuleID = bg.RuleID[len("general-"):]
			if bp != bg {
				t.Fatalf("call %d: plain %+v, general %+v", i, bp, bg)
			}
		} else {
			passed++
			qp, okP := pp.Quota()
			qg, okG := pg.Quota()
			if okP != okG || (okP && qp.RuleID[len("plain-"):] != qg.RuleID[len("general-"):]) {
				t.Fatalf("call %d: quota plain %+v, general %+v", i, qp, qg)
			}
			qp.RuleID, qg.RuleID = "", ""
			if qp != qg {
				t.Fatalf("call %d: quota plain %+v, general %+v", i, qp, qg)
			}
			pp.Exit()
			pg.Exit()
		}
		clk.Advance(time.Duration(i%5) * 40 * time.Millisecond)
	}
	if passed == 0 || refused == 0 {
		t.Fatalf("%d passed, %d refused: the sequence must show both", passed, refused)
	}
	snap := e.Snapshot()
	g, p := snap.Resources[0], snap.Resources[1] // sorted by name
	g.Resource, p.Resource = "", ""
	if fmt.Sprint(g) != fmt.Sprint(p) {
		t.Fatalf("stats plain %+v, general %+v", p, g)
	}
	top := e.TopKeys(-1)
	byID := map[string]string{}
	for _, r := range top {
		byID[r.RuleID] = fmt.Sprint(r.Keys)
	}
	for _, id := range []string{"i", "u"} {
		if byID["plain-"+id] != byID["general-"+id] {
			t.Fatalf("top keys of %s: plain %s, general %s", id, byID["plain-"+id], byID["general-"+id])
		}
	}
	for _, k := range []string{"u0", "u1", "u2"} {
		kp, _ := e.InspectKey("plain-u", k)
		kg, _ := e.InspectKey("general-u", k)
		if kp.Remaining != kg.Remaining || kp.Tracked != kg.Tracked {
			t.Fatalf("key %s: plain %+v, general %+v", k, kp, kg)
		}
	}
}

// TestPlainPathChoice: which resources take the plain path.
func TestPlainPathChoice(t *testing.T) {
	tb := func(id string, l Level) Rule {
		return Rule{ID: id, Resource: id, Level: l, Algorithm: AlgoTokenBucket, Limit: 5}
	}
	with := func(r Rule, f func(*Rule)) Rule { f(&r); return r }
	user, global := tb("x", LevelUser), tb("x", LevelGlobal)
	cases := []struct {
		name  string
		rules []Rule
		want  int // rules on the plain path; 0: not taken
	}{
		{"user+global", []Rule{user, with(global, func(r *Rule) { r.ID = "y" })}, 2},
		{"one user rule", []Rule{user}, 1},
		{"one global rule (the single path)", []Rule{global}, 0},
		{"MaxWait", []Rule{with(user, func(r *Rule) { r.MaxWait = time.Second })}, 0},
		{"concurrency", []Rule{with(user, func(r *Rule) { r.Algorithm, r.Limit = AlgoConcurrency, 2 })}, 0},
		{"five rules", []Rule{user, with(user, func(r *Rule) { r.ID = "2" }), with(user, func(r *Rule) { r.ID = "3" }),
			with(user, func(r *Rule) { r.ID = "4" }), with(global, func(r *Rule) { r.ID = "5" })}, 0},
	}
	for _, c := range cases {
		e, _ := newTestEngine(t, c.rules...)
		if got := len(e.rules.Load().byResource["x"].plain); got != c.want {
			t.Errorf("%s: %d rules on the plain path, want %d", c.name, got, c.want)
		}
	}
}
