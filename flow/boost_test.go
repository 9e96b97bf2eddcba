package flow

import (
	"strings"
	"testing"
	"time"
)

// effectiveLimit is the rule id's EffectiveLimit in the engine's snapshot.
func effectiveLimit(t *testing.T, e *Engine, id string) float64 {
	t.Helper()
	for _, r := range e.Snapshot().Rules {
		if r.ID == id {
			return r.EffectiveLimit
		}
	}
	t.Fatalf("no rule %q in the snapshot", id)
	return 0
}

// A factor above 1 (the CPU controller's idle-CPU boost) raises adaptive
// rules, up to their BoostLimit, and leaves the others alone.
func TestBoostRaisesAdaptiveRules(t *testing.T) {
	tb := func(id string, adaptive bool, boostLimit float64) Rule {
		return Rule{ID: id, Resource: "r", Algorithm: AlgoTokenBucket, Limit: 100, Adaptive: adaptive, BoostLimit: boostLimit}
	}
	conc := Rule{ID: "conc", Resource: "c", Algorithm: AlgoConcurrency, Limit: 3, Adaptive: true}
	e, _ := newTestEngine(t, tb("free", true, 0), tb("capped", true, 130), tb("fixed", false, 0), conc)
	for _, c := range []struct {
		factor                    float64
		free, capped, fixed, conc float64
	}{
		{2, 200, 130, 100, 6},
		{1.2, 120, 120, 100, 3}, // a concurrency cap stays whole: floor(3.6)
		{0.5, 50, 50, 100, 1},
		{1, 100, 100, 100, 3},
	} {
		e.SetAdaptiveFactor(c.factor)
		got := []float64{effectiveLimit(t, e, "free"), effectiveLimit(t, e, "capped"), effectiveLimit(t, e, "fixed"), effectiveLimit(t, e, "conc")}
		want := []float64{c.free, c.capped, c.fixed, c.conc}
		for i, id := range []string{"free", "capped", "fixed", "conc"} {
			if got[i] != want[i] {
				t.Errorf("factor %v: rule %s effective limit %v, want %v", c.factor, id, got[i], want[i])
			}
		}
	}
}

// An item keeps the rule's boost headroom: boostLimit scales with its limit.
func TestBoostItems(t *testing.T) {
	r := Rule{ID: "p", Resource: "r", Level: LevelParam, Param: "tenant", Algorithm: AlgoFixedWindow, Limit: 10,
		Items: map[string]float64{"big": 40}, Adaptive: true, BoostLimit: 15}
	if got := r.withItemLimit(40).BoostLimit; got != 60 {
		t.Errorf("item of limit 40: boostLimit %v, want 60 (the rule's 1.5×)", got)
	}
	e, _ := newTestEngine(t, r)
	e.SetAdaptiveFactor(3)
	if got := effectiveLimit(t, e, "p"); got != 15 {
		t.Errorf("factor 3, boostLimit 15: effective limit %v, want 15", got)
	}
}

// The boost never raises a cluster rule: its limit is shared with
// instances whose CPU this one does not see.
func TestBoostSkipsClusterRules(t *testing.T) {
	ts := &fakeTokenServer{res: TokenResult{Allowed: true, Refused: -1, Remaining: 7}, instances: 1}
	c := cfw("c", LevelGlobal, 10, "global", "local")
	c.Adaptive = true
	e, _ := clusterEngine(t, ts, c)
	e.SetAdaptiveFactor(2)
	if _, err := e.Entry("r"); err != nil {
		t.Fatal(err)
	}
	if f := ts.acquired[0].Factor; f != 1 {
		t.Errorf("token request factor %v under a boost of 2, want 1", f)
	}
	if got := effectiveLimit(t, e, "c"); got != 10 {
		t.Errorf("cluster rule's effective limit %v under a boost of 2, want 10", got)
	}
	e.SetAdaptiveFactor(0.5)
	if _, err := e.Entry("r"); err != nil {
		t.Fatal(err)
	}
	if f := ts.acquired[1].Factor; f != 0.5 {
		t.Errorf("token request factor %v under a cut to 0.5, want 0.5", f)
	}
}

func TestBoostLimitValidation(t *testing.T) {
	base := Rule{ID: "b", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 100, Window: time.Second, Adaptive: true}
	for _, c := range []struct {
		edit func(r *Rule)
		want string
	}{
		{func(r *Rule) { r.Adaptive, r.BoostLimit = false, 150 }, `boostLimit: only with "adaptive": true`},
		{func(r *Rule) { r.BoostLimit = 50 }, "boostLimit: must be >= limit 100"},
		{func(r *Rule) { r.BoostLimit = -1 }, "boostLimit: must be a finite number >= 0"},
		{func(r *Rule) { r.BoostLimit, r.Cluster = 150, &ClusterSpec{Threshold: "global", Fallback: "local"} }, "boostLimit: not for cluster rules"},
		{func(r *Rule) { r.Algorithm, r.BoostLimit = AlgoAdaptiveConcurrency, 150 }, "boostLimit"},
	} {
		r := base
		c.edit(&r)
		err := r.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Validate() = %v, want %q", r, err, c.want)
		}
	}
	r := base
	r.BoostLimit = 150
	if err := r.Validate(); err != nil {
		t.Errorf("boostLimit 150 on an adaptive limit of 100: %v", err)
	}
}
