package adaptive

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// feed runs the pure update over samples, one period apart, and returns the
// state after each.
func feed(cfg Config, st State, samples ...float64) []State {
	out := make([]State, len(samples))
	for i, x := range samples {
		st = st.Next(cfg, x, t0.Add(time.Duration(st.Samples+1)*250*time.Millisecond))
		out[i] = st
	}
	return out
}

func repeat(x float64, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = x
	}
	return s
}

func last(s []State) State { return s[len(s)-1] }

// Requirement 1 (reaction) and 2 (recovery).
func TestReactionAndRecovery(t *testing.T) {
	cfg := Defaults()
	warm := feed(cfg, State{}, repeat(0.60, 20)...)
	hot := feed(cfg, last(warm), repeat(0.95, 12)...)
	for i, s := range hot {
		t.Logf("hot sample %2d: cpu %.3f f %.4f %s (%s)", i+1, s.CPU, s.Factor, s.Decision, s.Reason)
	}
	if f := hot[1].Factor; f >= 1 {
		t.Errorf("factor after hot sample 2 = %.4f, want < 1", f)
	}
	if f := hot[3].Factor; f > 0.85 {
		t.Errorf("factor after hot sample 4 = %.4f, want <= 0.85", f)
	}
	prev := last(warm).Factor
	for i, s := range hot {
		if s.Factor < prev*0.5 {
			t.Errorf("hot sample %d cut %.4f -> %.4f, more than 50%%", i+1, prev, s.Factor)
		}
		if s.Factor < cfg.MinFactor {
			t.Errorf("hot sample %d: factor %.4f below minFactor %.2f", i+1, s.Factor, cfg.MinFactor)
		}
		prev = s.Factor
	}

	lastCut := last(hot).LastCut
	cool := feed(cfg, last(hot), repeat(0.50, 24)...)
	prev = last(hot).Factor
	for i, s := range cool {
		t.Logf("cool sample %2d: cpu %.3f f %.4f %s (%s)", i+1, s.CPU, s.Factor, s.Decision, s.Reason)
		if s.Factor > prev {
			if s.Samples-lastCut <= 8 {
				t.Errorf("cool sample %d: factor rose %d samples after the last cut, want no rise within 8", i+1, s.Samples-lastCut)
			}
			if s.Factor > prev*1.05+1e-12 {
				t.Errorf("cool sample %d: rise %.4f -> %.4f is more than 5%%", i+1, prev, s.Factor)
			}
		}
		prev = s.Factor
	}
	if f := last(cool).Factor; f != 1 {
		t.Errorf("factor after 24 cool samples = %.4f, want 1", f)
	}
}

// Requirement 3: one spike of 1.0 on a steady CPU at or below the band's low
// edge changes nothing, whether the factor is 1 or was cut long ago.
func TestSingleSpikeIgnored(t *testing.T) {
	cfg := Defaults()
	cases := []struct{ start, level float64 }{
		{1, 0.2}, {1, 0.5}, {1, 0.65}, {1, 0.69}, {1, 0.70},
		// A cut factor on a CPU below the band rises anyway; at the edge it holds.
		{0.6, 0.70},
	}
	for _, c := range cases {
		start, level := c.start, c.level
		{
			t.Run(fmt.Sprintf("f=%.1f/cpu=%.2f", start, level), func(t *testing.T) {
				st := State{Factor: start}
				st = last(feed(cfg, st, repeat(level, 40)...))
				before := st.Factor
				after := feed(cfg, st, append([]float64{1.0}, repeat(level, 40)...)...)
				for i, s := range after {
					if s.Factor != before {
						t.Fatalf("sample %d after the spike: factor %.4f, want %.4f unchanged (%s)", i, s.Factor, before, s.Reason)
					}
				}
			})
		}
	}
}

// Requirement 4: a constant CPU anywhere inside the band for 10 simulated
// minutes never changes the factor.
func TestConstantInBandHolds(t *testing.T) {
	cfg := Defaults()
	n := int(10 * time.Minute / cfg.Period)
	for x := cfg.BandLow; x <= cfg.BandHigh+1e-9; x += 0.01 {
		x := min(x, cfg.BandHigh)
		for _, start := range []float64{1, 0.5} {
			st := State{Factor: start}
			changes := 0
			for i := 0; i < n; i++ {
				next := st.Next(cfg, x, t0.Add(time.Duration(i)*cfg.Period))
				if next.Factor != st.Factor && i > 0 {
					changes++
				}
				st = next
			}
			if changes != 0 || st.Factor != start {
				t.Errorf("cpu %.2f from f=%.1f: %d changes over %d samples, final f %.4f; want 0 changes", x, start, changes, n, st.Factor)
			}
		}
	}
}

func TestNextBoundsAndSkips(t *testing.T) {
	cfg := Config{MinFactor: 0.3}
	st := last(feed(cfg, State{}, repeat(1.0, 200)...))
	if st.Factor != 0.3 {
		t.Errorf("factor after a long overload = %.4f, want the floor 0.3", st.Factor)
	}
	if st.Reason != ReasonFloor && st.Reason != ReasonCutGap {
		t.Errorf("reason at the floor = %q", st.Reason)
	}
	nan := st.Next(cfg, nanValue(), t0)
	if nan.Decision != DecisionSkip || nan.Skipped != st.Skipped+1 || nan.Factor != st.Factor || nan.CPU != st.CPU {
		t.Errorf("NaN sample: got %+v, want a counted skip that changes nothing", nan)
	}
	raised := st.Next(Config{MinFactor: 0.5}, 0.8, t0)
	if raised.Factor != 0.5 {
		t.Errorf("floor moved to 0.5: factor %.4f, want 0.5", raised.Factor)
	}
	hi := State{}.Next(cfg, 7, t0)
	if hi.CPU != 1 || hi.Sample != 1 {
		t.Errorf("sample 7 stored as cpu %v sample %v, want clamped to 1", hi.CPU, hi.Sample)
	}
}

func nanValue() float64 { var z float64; return z / z }

func BenchmarkNext(b *testing.B) {
	b.ReportAllocs()
	cfg := Defaults()
	var st State
	xs := []float64{0.6, 0.95, 0.95, 0.9, 0.8, 0.5, 0.5, 0.75}
	for i := 0; b.Loop(); i++ {
		st = st.Next(cfg, xs[i%len(xs)], t0)
	}
	_ = st
}
