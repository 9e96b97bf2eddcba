package simulate

import (
	"math"
	"testing"
	"time"
)

func constant(f float64) Policy { return func(float64, time.Time) float64 { return f } }

func TestSteadyStates(t *testing.T) {
	cases := []struct {
		name   string
		m      Model
		load   float64
		factor float64
		want   float64 // the CPU it settles at
	}{
		{"half load", Model{Noise: -1}, 0.5, 1, 0.1 + 0.9*0.5},
		{"overload capped by the rule at f", Model{Noise: -1}, 3, 0.7, 0.1 + 0.9*0.7},
		{"overload saturates", Model{Noise: -1, Headroom: 2}, 3, 1, 1},
		{"refusals cost CPU", Model{Noise: -1, RejectCost: 0.1}, 2, 0.5, 0.1 + 0.9*(0.5+0.1*1.5)},
	}
	for _, c := range cases {
		tr := c.m.Run(20*time.Second, Steps([]time.Duration{0}, []float64{c.load}), constant(c.factor))
		got := tr[len(tr)-1]
		if math.Abs(got.CPU-c.want) > 1e-6 || got.Sample != got.CPU {
			t.Errorf("%s: settles at cpu %.6f (read %.6f), want %.6f", c.name, got.CPU, got.Sample, c.want)
		}
	}
}

func TestDeterministicAndNoisy(t *testing.T) {
	load := Steps([]time.Duration{0, 5 * time.Second}, []float64{1.5, 0.5})
	a := Model{Seed: 1}.Run(10*time.Second, load, constant(0.8))
	b := Model{Seed: 1}.Run(10*time.Second, load, constant(0.8))
	c := Model{Seed: 2}.Run(10*time.Second, load, constant(0.8))
	if len(a) != 40 {
		t.Fatalf("10 s at 250ms: %d points, want 40", len(a))
	}
	same, differ := true, false
	for i := range a {
		same = same && a[i] == b[i]
		differ = differ || a[i].Sample != c[i].Sample
		if d := a[i].Sample - a[i].CPU; a[i].Sample > 0 && a[i].Sample < 1 && math.Abs(d) > 0.05 {
			t.Errorf("point %d: noise %.4f beyond ±0.05", i, d)
		}
	}
	if !same || !differ {
		t.Errorf("same seed same trace: %v; other seed differs: %v; want both", same, differ)
	}
	// Dead time: the first sample cannot yet show the load.
	if a[0].CPU != 0.1 {
		t.Errorf("first sample cpu %.3f, want the idle 0.1 (dead time)", a[0].CPU)
	}
}
