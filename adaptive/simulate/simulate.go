package simulate

import (
	"math"
	"math/rand/v2"
	"time"
)

// Model is the simulated service and how it is sampled.
type Model struct {
	Capacity float64 // requests/s at 100% CPU; default 1000
	Idle     float64 // CPU with no load; default 0.1
	Headroom float64 // the adaptive rule's limit over Capacity; default 1
	// RejectCost is the CPU of refusing a call relative to serving it;
	// default 0 (refusing is free). Above 0 the offered load matters
	// even when the limit caps what is admitted.
	RejectCost float64
	Lag        time.Duration // time constant of the CPU's response; default 500ms
	DeadMin    int           // least dead time in samples; default 1
	DeadMax    int           // largest dead time in samples; default 2
	Noise      float64       // amplitude of the additive uniform noise; default 0.05
	Period     time.Duration // sample period; default 250ms
	Seed       uint64        // seeds the noise and dead-time draws; the same seed gives the same run
	// Admit, when set, replaces the modelled rule: it is called once per
	// period [from, to) with the offered load (multiples of Capacity) and
	// returns what was admitted, for driving a real engine.
	Admit func(from, to time.Duration, offered float64) float64
}

// Policy is the controller under test: it gets one CPU reading and the
// virtual time, and returns the factor in force from now on.
type Policy func(cpu float64, now time.Time) float64

// Point is one sample of a run.
type Point struct {
	T        time.Duration // since the start
	Load     float64       // offered load in multiples of Capacity
	Admitted float64       // admitted rate over Capacity
	CPU      float64       // the service's true CPU
	Sample   float64       // what the sampler read (CPU plus noise, clamped)
	Factor   float64       // factor returned by the policy for this sample
}

// Start returns the virtual time a run starts at; the first sample is one
// Period later.
func Start() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

func (m Model) withDefaults() Model {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&m.Capacity, 1000)
	def(&m.Idle, 0.1)
	def(&m.Headroom, 1)
	def(&m.Noise, 0.05)
	m.Noise = max(m.Noise, 0)
	if m.Lag == 0 {
		m.Lag = 500 * time.Millisecond
	}
	if m.Period == 0 {
		m.Period = 250 * time.Millisecond
	}
	if m.DeadMin == 0 {
		m.DeadMin = 1
	}
	if m.DeadMax < m.DeadMin {
		m.DeadMax = max(2, m.DeadMin)
	}
	return m
}

// Run simulates d of virtual time under the offered load load(t) (in
// multiples of Capacity) and returns one Point per sample period.
func (m Model) Run(d time.Duration, load func(t time.Duration) float64, p Policy) []Point {
	m = m.withDefaults()
	rng := rand.New(rand.NewPCG(m.Seed, m.Seed^0x9e3779b97f4a7c15))
	keep := 1 - math.Exp(-float64(m.Period)/float64(m.Lag))
	steps := int(d / m.Period)
	out := make([]Point, 0, steps)
	// drive[k] is the CPU the load admitted during period k would settle at.
	drive := make([]float64, 0, steps)
	cpu, f := m.Idle, 1.0
	start := Start()
	for k := 0; k < steps; k++ {
		t := time.Duration(k) * m.Period
		l := load(t)
		adm := min(l, m.Headroom*f)
		if m.Admit != nil {
			adm = m.Admit(t, t+m.Period, l)
		}
		drive = append(drive, m.Idle+(1-m.Idle)*min(adm+m.RejectCost*(l-adm), 1))
		dead := m.DeadMin + rng.IntN(m.DeadMax-m.DeadMin+1)
		in := m.Idle
		if j := k - dead; j >= 0 {
			in = drive[j]
		}
		cpu += keep * (in - cpu)
		sample := min(max(cpu+m.Noise*(2*rng.Float64()-1), 0), 1)
		f = p(sample, start.Add(t+m.Period))
		out = append(out, Point{T: t + m.Period, Load: l, Admitted: adm, CPU: cpu, Sample: sample, Factor: f})
	}
	return out
}

// Steps returns a load function that is levels[i] from at[i] on (at[0] is
// normally 0).
func Steps(at []time.Duration, levels []float64) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		l := 0.0
		for i, a := range at {
			if t >= a {
				l = levels[i]
			}
		}
		return l
	}
}
