package flow

import (
	"strings"
	"testing"
	"time"
)

// TestStripesValidation: stripes are for global cluster rules with
// threshold global, of the algorithms that split into shares, in
// [1, MaxStripes] and at most the limit.
func TestStripesValidation(t *testing.T) {
	base := func() Rule {
		return Rule{ID: "g", Resource: "r", Algorithm: AlgoFixedWindow, Limit: 100, Window: time.Second,
			Stripes: 3, Cluster: &ClusterSpec{Threshold: "global", Fallback: "local"}}
	}
	cases := []struct {
		name string
		edit func(*Rule)
		want string // "" valid
	}{
		{"fixed_window", func(*Rule) {}, ""},
		{"token_bucket", func(r *Rule) { r.Algorithm = AlgoTokenBucket }, ""},
		{"one", func(r *Rule) { r.Stripes = 1 }, ""},
		{"max", func(r *Rule) { r.Stripes = MaxStripes }, ""},
		{"over max", func(r *Rule) { r.Stripes = MaxStripes + 1 }, "stripes: must be in [1, 64]"},
		{"negative", func(r *Rule) { r.Stripes = -1 }, "stripes: must be in [1, 64]"},
		{"over limit", func(r *Rule) { r.Limit = 2 }, "stripes: must be at most limit (2)"},
		{"local rule", func(r *Rule) { r.Cluster = nil }, "stripes: only for cluster rules"},
		{"per_instance", func(r *Rule) { r.Cluster.Threshold = "per_instance" }, "stripes: only for threshold global"},
		{"user level", func(r *Rule) { r.Level = LevelUser }, "stripes: only for global level rules"},
		{"leaky_bucket", func(r *Rule) { r.Algorithm = AlgoLeakyBucket }, "stripes: not for leaky_bucket rules"},
		{"concurrency", func(r *Rule) { r.Algorithm, r.Window = AlgoConcurrency, 0 }, "stripes: not for concurrency rules"},
	}
	for _, c := range cases {
		r := base()
		c.edit(&r)
		err := r.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestStripedRuleAskedAlone: the token server gets a striped rule in a
// request of its own (its stripe is a key of its own), and the others of
// its level alone too.
func TestStripedRuleAskedAlone(t *testing.T) {
	a := cfw("a", LevelGlobal, 100, "global", "local")
	a.Stripes = 2
	b := cfw("b", LevelGlobal, 100, "global", "local")
	ts := &fakeTokenServer{res: TokenResult{Allowed: true, Refused: -1}, instances: 1}
	e, _ := clusterEngine(t, ts, a, b)
	if got := seq(t, e, "r", 1); got != "pass" {
		t.Fatalf("got %q", got)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.acquired) != 2 || len(ts.acquired[0].Rules) != 1 || len(ts.acquired[1].Rules) != 1 {
		t.Fatalf("requests %d, want 2 of one rule each", len(ts.acquired))
	}
}
