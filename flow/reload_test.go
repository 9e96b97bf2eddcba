package flow

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadRulesAllOrNothing(t *testing.T) {
	good := fw("g", "r", LevelGlobal, 1, time.Minute)
	e, _ := newTestEngine(t, good)
	bad := []Rule{
		fw("ok", "r", LevelGlobal, 5, time.Second),
		{ID: "neg", Resource: "r", Algorithm: AlgoFixedWindow, Limit: -1},
		{Resource: "", Algorithm: AlgoTokenBucket, Limit: 1, Warmup: time.Second},
		fw("ok", "s", LevelGlobal, 5, time.Second),
	}
	err := e.LoadRules(bad)
	if err == nil {
		t.Fatal("LoadRules accepted bad rules")
	}
	for _, want := range []string{
		`rules[1] (id "neg"): limit: must be > 0`,
		`rules[2]: resource: must not be empty`,
		`rules[2]: warmup: only for warm_up and sentinel_warm_up rules`,
		`rules[3] (id "ok"): id: duplicate of rules[0]`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if got := e.Rules(); len(got) != 1 || !reflect.DeepEqual(got[0], good) {
		t.Fatalf("rules changed after a failed load: %+v", got)
	}
	if got, want := seq(t, e, "r", 2), "pass g"; got != want {
		t.Fatalf("behaviour after a failed load: got %q, want %q", got, want)
	}
}

func TestReloadKeepsStateOfUnchangedRules(t *testing.T) {
	rules := []Rule{
		fw("g", "r", LevelGlobal, 2, time.Minute),
		fw("u", "r", LevelUser, 1, time.Minute),
		fw("other", "r", LevelGlobal, 100, time.Minute),
	}
	e, _ := newTestEngine(t, rules...)
	u := WithUser("a")
	if got, want := seq(t, e, "r", 2, u), "pass u"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// The same rules again (a fresh copy), plus a new one: g and u keep
	// their counts and keys, so nobody gets a fresh burst.
	again := append([]Rule(nil), rules...)
	again = append(again, fw("new", "s", LevelGlobal, 1, time.Minute))
	if err := e.LoadRules(again); err != nil {
		t.Fatal(err)
	}
	if got, want := seq(t, e, "r", 1, u), "u"; got != want {
		t.Fatalf("after an unchanged reload, user a: got %q, want %q", got, want)
	}
	if got, want := seq(t, e, "r", 2), "pass g"; got != want {
		t.Fatalf("after an unchanged reload, global: got %q, want %q", got, want)
	}
	// A changed rule starts afresh.
	again[0].Limit = 3
	if err := e.LoadRules(again); err != nil {
		t.Fatal(err)
	}
	if got, want := seq(t, e, "r", 4), "pass pass pass g"; got != want {
		t.Fatalf("after changing g: got %q, want %q", got, want)
	}
	if got, want := seq(t, e, "r", 1, u), "u"; got != want {
		t.Fatalf("u unchanged, still spent: got %q, want %q", got, want)
	}
	// Statistics survive reloads; removed resources keep theirs (calls to a
	// resource without rules are not counted).
	if err := e.LoadRules(nil); err != nil {
		t.Fatal(err)
	}
	if got, want := seq(t, e, "r", 3), "pass pass pass"; got != want {
		t.Fatalf("no rules: got %q, want %q", got, want)
	}
	snap := e.Snapshot()
	if len(snap.Resources) != 2 || snap.Resources[0].Resource != "r" || snap.Resources[1].Resource != "s" {
		t.Fatalf("resources: %+v", snap.Resources)
	}
	if r := snap.Resources[0]; r.Passed != 5 || r.Blocked[LevelUser] != 3 || r.Blocked[LevelGlobal] != 2 {
		t.Fatalf("lifetime stats of r: passed %d blocked %v", r.Passed, r.Blocked)
	}
	if len(snap.Rules) != 0 {
		t.Fatalf("rules in force: %+v", snap.Rules)
	}
}

func TestValidateTable(t *testing.T) {
	base := Rule{ID: "x", Resource: "r", Limit: 1}
	tests := []struct {
		name string
		mod  func(*Rule)
		want string // "" = valid
	}{
		{"defaults", func(*Rule) {}, ""},
		{"nan limit", func(r *Rule) { r.Limit = nan() }, "limit: must be a finite number"},
		{"negative window", func(r *Rule) { r.Window = -1 }, "window: must be >= 0"},
		{"system level", func(r *Rule) { r.Level = LevelSystem }, "level: must be global, user, ip or param"},
		{"burst on window", func(r *Rule) { r.Algorithm = AlgoFixedWindow; r.Burst = 2 }, "burst: only for token_bucket and sentinel_hotspot rules"},
		{"warm_up without warmup", func(r *Rule) { r.Algorithm = AlgoWarmUp }, "warmup: must be > 0 for warm_up rules"},
		{"cold factor 1", func(r *Rule) { r.Algorithm = AlgoWarmUp; r.Warmup = time.Second; r.ColdFactor = 1 }, "coldFactor: must be a finite number > 1"},
		{"buckets on log", func(r *Rule) { r.Algorithm = AlgoSlidingLog; r.Buckets = 3 }, "buckets: only for sliding_window and circuit_breaker rules"},
		{"allowMissing on a limit", func(r *Rule) { r.AllowMissing = true }, "allowMissing: only for allow rules"},
		{"fractional concurrency", func(r *Rule) { r.Algorithm = AlgoConcurrency; r.Limit = 1.5 }, "limit: must be a whole number for concurrency"},
		{"maxWait on concurrency", func(r *Rule) { r.Algorithm = AlgoConcurrency; r.MaxWait = time.Second }, "maxWait: not supported for concurrency rules"},
		{"maxKeys on global", func(r *Rule) { r.MaxKeys = 5 }, "maxKeys: only for user, ip and param levels"},
		{"idleTTL on global", func(r *Rule) { r.IdleTTL = time.Minute }, "idleTTL: only for user, ip and param levels"},
		{"bad threshold", func(r *Rule) { r.Cluster = &ClusterSpec{Threshold: "all"} }, `cluster.threshold: must be global or per_instance, not "all"`},
		{"bad fallback", func(r *Rule) { r.Cluster = &ClusterSpec{Fallback: "maybe"} }, `cluster.fallback: must be local, allow or deny, not "maybe"`},
		{"huge log", func(r *Rule) { r.Algorithm = AlgoSlidingLog; r.Limit = 1e9 }, "limit: must be <= 1048576 for sliding_log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			tt.mod(&r)
			err := r.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if tt.want == "" {
				if err := r.WithDefaults().Validate(); err != nil {
					t.Fatalf("WithDefaults made it invalid: %v", err)
				}
			}
		})
	}
}

func TestWithDefaultsDoesNotModify(t *testing.T) {
	spec := &ClusterSpec{}
	r := Rule{Resource: "r", Level: LevelUser, Limit: 4, Cluster: spec}
	d := r.WithDefaults()
	if d.Window != time.Second || d.Burst != 4 || d.MaxKeys != DefaultMaxKeys || d.IdleTTL != DefaultIdleTTL ||
		d.Cluster.Threshold != "global" || d.Cluster.Fallback != "local" {
		t.Fatalf("defaults: %+v %+v", d, *d.Cluster)
	}
	if *spec != (ClusterSpec{}) || r.Window != 0 {
		t.Fatalf("WithDefaults modified its input")
	}
}

func TestLevelAlgorithmText(t *testing.T) {
	for _, l := range Levels() {
		b, _ := l.MarshalText()
		var back Level
		if err := back.UnmarshalText(b); err != nil || back != l {
			t.Fatalf("level %v round trip: %v %v", l, back, err)
		}
	}
	for _, a := range Algorithms() {
		b, _ := a.MarshalText()
		var back Algorithm
		if err := back.UnmarshalText(b); err != nil || back != a {
			t.Fatalf("algorithm %v round trip: %v %v", a, back, err)
		}
	}
	if _, err := ParseLevel("system"); err == nil {
		t.Fatal("ParseLevel accepted system")
	}
	if _, err := ParseAlgorithm("gcra"); err == nil {
		t.Fatal("ParseAlgorithm accepted gcra")
	}
}
