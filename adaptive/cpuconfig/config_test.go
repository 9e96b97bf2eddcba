package cpuconfig

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config (all defaults): %v", err)
	}
	if err := Defaults().Validate(); err != nil {
		t.Errorf("Defaults(): %v", err)
	}
	if err := (Config{CPUTarget: 0.7, BandLow: 0.7, BandHigh: 0.9}).Validate(); err != nil {
		t.Errorf("band edge at the target: %v", err)
	}
	cases := []struct {
		name string
		cfg  Config
		want []string // every field the error must name
	}{
		{"target over 1", Config{CPUTarget: 1.2}, []string{"cpuTarget: must be in (0, 1)"}},
		{"negative target", Config{CPUTarget: -0.1}, []string{"cpuTarget"}},
		{"band low above target", Config{BandLow: 0.85, BandHigh: 0.9}, []string{"bandLow: must be <= cpuTarget"}},
		{"band high below target", Config{BandHigh: 0.75}, []string{"bandHigh: must be >= cpuTarget"}},
		{"band inverted", Config{BandLow: 0.9, BandHigh: 0.6}, []string{"bandLow: must be below bandHigh"}},
		{"min factor", Config{MinFactor: 1.5}, []string{"minFactor"}},
		{"period", Config{Period: -time.Second}, []string{"period: must be > 0"}},
		{"alphas", Config{AlphaUp: 2, AlphaDown: -1}, []string{"alphaUp", "alphaDown"}},
		{"steps", Config{CutGap: -1, RaiseHold: -2, Settle: MaxSettle + 1}, []string{"cutGap", "raiseHold", "settle"}},
		{"guard", Config{SystemGuard: SystemGuard{CPU: 1.5, MinInFlight: -3}}, []string{"systemCPU", "systemMinInFlight"}},
		{"everything at once", Config{CPUTarget: 2, MinFactor: -1, MaxCut: 3, MinChange: 1}, []string{"cpuTarget", "minFactor", "maxCut", "minChange"}},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if err == nil {
			t.Errorf("%s: Validate() = nil, want an error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}
}

func TestConfigJSON(t *testing.T) {
	var c Config
	doc := `{"cpuTarget": 0.75, "bandLow": 0.6, "bandHigh": 0.85, "minFactor": 0.2, "period": "500ms", "systemCPU": 0.9}`
	if err := json.Unmarshal([]byte(doc), &c); err != nil {
		t.Fatal(err)
	}
	want := Config{CPUTarget: 0.75, BandLow: 0.6, BandHigh: 0.85, MinFactor: 0.2, Period: 500 * time.Millisecond, SystemGuard: SystemGuard{CPU: 0.9}}
	if c != want {
		t.Errorf("decoded %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := json.Unmarshal(out, &back); err != nil || back != c {
		t.Errorf("round trip through %s: %+v, %v; want %+v", out, back, err, c)
	}
	for doc, want := range map[string]string{
		`{"cpuTarget": 0.8, "target": 0.7}`: `unknown field "target"`,
		`{"period": "250"}`:                 "period:",
		`{"period": "-1s"}`:                 "period: must be > 0",
		`{"cpuTarget": "high"}`:             "cpuTarget",
	} {
		var c Config
		err := json.Unmarshal([]byte(doc), &c)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Unmarshal(%s) = %v, want an error containing %q", doc, err, want)
		}
	}
}

func FuzzConfigJSON(f *testing.F) {
	f.Add(`{"cpuTarget": 0.75, "period": "500ms", "systemCPU": 0.9}`)
	f.Add(`{"settle": 40, "cutGap": 0}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var c Config
		if err := json.Unmarshal([]byte(doc), &c); err != nil {
			return
		}
		_ = c.Validate() // must not panic
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", c, err)
		}
		var back Config
		if err := json.Unmarshal(out, &back); err != nil || back != c {
			t.Fatalf("round trip of %q through %s: %+v, %v", doc, out, back, err)
		}
	})
}

// TestBandFollowsTarget: the band's defaults sit around the target given,
// so a target set alone (as a rules document's "cpuTarget" often is) is
// valid; the band given explicitly is kept.
func TestBandFollowsTarget(t *testing.T) {
	for _, c := range []struct {
		in             Config
		lo, hi         float64
		wantProblemsOf string
	}{
		{Config{}, 0.70, 0.88, ""},
		{Config{CPUTarget: 0.6}, 0.50, 0.68, ""},
		{Config{CPUTarget: 0.95}, 0.85, 0.99, ""},
		{Config{CPUTarget: 0.05}, 0.01, 0.13, ""},
		{Config{CPUTarget: 0.6, BandLow: 0.4}, 0.40, 0.68, ""},
		{Config{CPUTarget: 1.5}, 0.70, 0.88, "cpuTarget"}, // out of range: the fixed band, one problem
	} {
		got := c.in.WithDefaults()
		if got.BandLow != c.lo || got.BandHigh != c.hi {
			t.Errorf("%+v: band [%v, %v], want [%v, %v]", c.in, got.BandLow, got.BandHigh, c.lo, c.hi)
		}
		var fields []string
		c.in.Check(func(field, _ string) { fields = append(fields, field) })
		if strings.Join(fields, ",") != c.wantProblemsOf {
			t.Errorf("%+v: problems in %q, want %q", c.in, fields, c.wantProblemsOf)
		}
	}
}
