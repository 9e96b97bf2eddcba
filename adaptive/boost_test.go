package adaptive

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// boostCfg is the seed's boost: up to 1.5× under 50% CPU.
func boostCfg() Config {
	c := Defaults()
	c.Boost.Factor, c.Boost.Below = 1.5, 0.5
	return c
}

// directionChanges counts the turns of the factor over states.
func directionChanges(states []State) int {
	dir, n := 0, 0
	for i := 1; i < len(states); i++ {
		d := 0
		switch a, b := states[i-1].Factor, states[i].Factor; {
		case b > a:
			d = 1
		case b < a:
			d = -1
		}
		if d != 0 && dir != 0 && d != dir {
			n++
		}
		if d != 0 {
			dir = d
		}
	}
	return n
}

func TestBoostOffByDefault(t *testing.T) {
	for i, s := range feed(Defaults(), State{}, repeat(0.05, 200)...) {
		if s.Factor != 1 {
			t.Fatalf("sample %d at 5%% CPU: factor %v, want 1 (the boost is off by default)", i+1, s.Factor)
		}
	}
}

// The boost rises under low CPU by the raise's steps, never past its
// factor, and falls back to 1 within two samples of the CPU rising.
func TestBoostRisesCappedAndFallsBack(t *testing.T) {
	cfg := boostCfg()
	idle := feed(cfg, State{}, repeat(0.2, 80)...)
	prev := 1.0
	for i, s := range idle {
		if s.Factor > cfg.Boost.Factor {
			t.Fatalf("idle sample %d: factor %v above boostFactor %v", i+1, s.Factor, cfg.Boost.Factor)
		}
		if s.Factor > prev*(1+cfg.MaxRaise)+1e-12 {
			t.Fatalf("idle sample %d: raised %v -> %v, more than maxRaise %v", i+1, prev, s.Factor, cfg.MaxRaise)
		}
		prev = s.Factor
	}
	if f := last(idle).Factor; f != cfg.Boost.Factor {
		t.Fatalf("after 20 s at 20%% CPU: factor %v (%s), want boostFactor %v", f, last(idle).Reason, cfg.Boost.Factor)
	}
	busy := feed(cfg, last(idle), repeat(0.75, 6)...)
	for i, s := range busy {
		t.Logf("busy sample %d: cpu %.3f f %.3f %s (%s)", i+1, s.CPU, s.Factor, s.Decision, s.Reason)
	}
	if f := busy[1].Factor; f != 1 {
		t.Errorf("factor after the second sample at 75%% CPU = %v, want 1 (boost withdrawn)", f)
	}
	if busy[0].Factor != cfg.Boost.Factor {
		t.Errorf("one sample over boostAbove withdrew the boost: %v", busy[0].Factor)
	}
	// Back to idle: no boost during raiseHold, then it climbs again.
	again := feed(cfg, last(busy), repeat(0.2, 40)...)
	for i, s := range again[:cfg.RaiseHold-len(busy)+1] {
		if s.Factor > 1 {
			t.Errorf("sample %d after the withdrawal: boosted to %v inside raiseHold", i+1, s.Factor)
		}
	}
	if f := last(again).Factor; f != cfg.Boost.Factor {
		t.Errorf("10 s idle after the withdrawal: factor %v, want %v", f, cfg.Boost.Factor)
	}
}

// A CPU hovering at either threshold, with noise, moves a boosted factor
// one way at most: the band between boostBelow and boostAbove holds it.
func TestBoostNoFlappingAtThresholds(t *testing.T) {
	cfg := boostCfg()
	rng := rand.New(rand.NewPCG(1, 2))
	noisy := func(mid float64, n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = mid + 0.04*(2*rng.Float64()-1)
		}
		return s
	}
	for _, at := range []float64{cfg.Boost.Below, cfg.Boost.Above} {
		// From idle (boosted) and from the base factor.
		for _, start := range []State{last(feed(cfg, State{}, repeat(0.2, 80)...)), {}} {
			states := feed(cfg, start, noisy(at, 800)...)
			if n := directionChanges(append([]State{start}, states...)); n > 0 {
				t.Errorf("cpu hovering at %v from factor %v: %d direction changes over 200 s, want 0", at, start.Factor, n)
			}
			t.Logf("cpu hovering at %v from factor %v: factor %.3f after 200 s", at, start.Factor, last(states).Factor)
			if at == cfg.Boost.Above && last(states).Factor != 1 {
				t.Errorf("cpu hovering at boostAbove: factor %v, want the boost withdrawn (1)", last(states).Factor)
			}
		}
	}
}

func TestBoostConfigChecks(t *testing.T) {
	for _, c := range []struct {
		b    Boost
		want string
	}{
		{Boost{Factor: 1}, "boostFactor: must be 0 (off) or in (1, 10]"},
		{Boost{Factor: 11}, "boostFactor"},
		{Boost{Factor: 1.5, Below: 0.75}, "boostBelow: must be below bandLow 0.7"},
		{Boost{Factor: 1.5, Below: 0.5, Above: 0.45}, "boostAbove: must be in (boostBelow 0.5, bandHigh 0.88]"},
		{Boost{Factor: 1.5, Below: 0.5, Above: 0.9}, "boostAbove"},
	} {
		cfg := Config{Boost: c.b}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Validate() = %v, want %q", c.b, err, c.want)
		}
	}
	if err := (Config{CPUTarget: 0.05}).Validate(); err != nil {
		t.Errorf("a low target with the boost off: %v", err)
	}
	d := Config{Boost: Boost{Factor: 2}}.WithDefaults().Boost
	if d.Below != 0.5 || d.Above != 0.6 {
		t.Errorf("default thresholds %v, %v; want 0.5, 0.6", d.Below, d.Above)
	}
}
