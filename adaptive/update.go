package adaptive

import (
	"math"
	"time"
)

// Decision is what one controller step did to the factor.
type Decision uint8

const (
	DecisionNone  Decision = iota // no sample yet
	DecisionHold                  // the factor did not change
	DecisionCut                   // the factor was lowered
	DecisionRaise                 // the factor was raised
	DecisionSkip                  // the sample was unusable; nothing changed
)

var decisionNames = [...]string{"none", "hold", "cut", "raise", "skip"}

// String returns the decision's lower-case name ("hold", "cut", ...), or
// "unknown" for a value outside the constants.
func (d Decision) String() string {
	if int(d) < len(decisionNames) {
		return decisionNames[d]
	}
	return "unknown"
}

// Reasons for a decision. They are constants so a step allocates nothing;
// State carries the numbers behind them.
const (
	ReasonFirst       = "first sample"
	ReasonInBand      = "cpu inside band"
	ReasonCut         = "cpu above band"
	ReasonSpike       = "cpu above band for one sample only"
	ReasonCutGap      = "cpu above band, too soon after the last cut"
	ReasonCutSettling = "cpu above band, answered by a cut still taking effect"
	ReasonFloor       = "cpu above band, factor at its floor"
	ReasonRaise       = "cpu below band"
	ReasonRaiseHold   = "cpu below band, holding after a cut"
	ReasonRaiseSettle = "cpu below band, answered by a raise still taking effect"
	ReasonCeiling     = "cpu below band, factor at 1"
	ReasonSkip        = "sample skipped"
)

// State is the controller's state: what it knows after its last sample. The
// zero State is a controller that has seen nothing (factor 1).
type State struct {
	Factor   float64   // scale of adaptive rules, in [MinFactor, 1]
	CPU      float64   // smoothed CPU, 0..1
	Sample   float64   // the last usable sample, clamped to 0..1
	Samples  int64     // usable samples seen
	Skipped  int64     // samples skipped (read errors, counters going back)
	Decision Decision  // what the last step did
	Reason   string    // why, one of the Reason constants
	LastCut  int64     // sample number of the last cut; 0 = none
	At       time.Time // when the last step ran
	Changed  time.Time // when the factor last changed

	// Set by Controller.State, not by Next.
	Published   float64 // the factor the engine applies now
	SystemLimit int64   // the system guard's in-flight limit; 0 = off

	// hist[n % Settle] is the factor in force after sample n: a cut is sized
	// against the largest factor of the last Settle samples, a raise against
	// the smallest, because the CPU seen now may still be their effect.
	hist [MaxSettle]float64
}

// Next returns the state after one CPU sample x taken at now, under the
// settings c. It is pure: no clock, no engine, no allocation, so tests drive
// it sample by sample. c is completed with WithDefaults and is expected to
// be valid. A NaN sample is skipped, and x is clamped to [0, 1].
//
// The rule: smooth with an EWMA that rises fast (AlphaUp) and falls slowly
// (AlphaDown); inside [BandLow, BandHigh] hold. Above the band, cut the factor
// by CutGain*(cpu-target)/cpu, at most MaxCut, at least CutGap samples after
// the previous cut, and only when the previous sample was hot too (a single
// spike cuts nothing). Below the band raise by at most MaxRaise per step
// toward target/cpu, not within RaiseHold samples of the last cut.
func (s State) Next(c Config, x float64, now time.Time) State {
	c = c.WithDefaults()
	s.At = now
	if math.IsNaN(x) {
		s.Skipped++
		s.Decision, s.Reason = DecisionSkip, ReasonSkip
		return s
	}
	x = clamp(x, 0, 1)
	settle := min(max(c.Settle, 1), MaxSettle)
	if s.Samples == 0 {
		return s.first(c, x)
	}
	prev := s.Sample
	alpha := c.AlphaDown
	if x > s.CPU {
		alpha = c.AlphaUp
	}
	s.CPU += alpha * (x - s.CPU)
	s.Sample = x
	s.Samples++

	// The factors in force over the last settle samples.
	hi, lo := s.hist[0], s.hist[0]
	for _, f := range s.hist[1:settle] {
		hi, lo = max(hi, f), min(lo, f)
	}
	f := clamp(s.Factor, c.MinFactor, 1) // the floor may have moved (SetConfig)
	s.Decision, s.Reason = DecisionHold, ReasonInBand
	switch {
	case s.CPU > c.BandHigh:
		f = s.cut(c, f, hi, prev)
	case s.CPU < c.BandLow:
		f = s.raise(c, f, lo)
	}
	if f != s.Factor {
		s.Factor = f
		s.Changed = now
	}
	s.hist[s.Samples%int64(settle)] = f
	return s
}

// first takes the first usable sample: the factor (1 for a zero State) is
// held, and it fills the history.
func (s State) first(c Config, x float64) State {
	if s.Factor == 0 {
		s.Factor = 1
	}
	s.Factor = clamp(s.Factor, c.MinFactor, 1)
	for i := range s.hist {
		s.hist[i] = s.Factor
	}
	s.Samples, s.CPU, s.Sample = 1, x, x
	s.Decision, s.Reason = DecisionHold, ReasonFirst
	return s
}

// cut returns the factor after a step above the band, given the factor f
// now, the largest factor hi of the settling samples and the previous
// sample prev, and records the decision in s. A cut is sized against hi:
// the heat seen now may still be that factor's effect.
func (s *State) cut(c Config, f, hi, prev float64) float64 {
	switch {
	case prev <= c.CPUTarget:
		s.Reason = ReasonSpike
	case s.LastCut > 0 && s.Samples-s.LastCut < int64(c.CutGap):
		s.Reason = ReasonCutGap
	case f <= c.MinFactor:
		s.Reason = ReasonFloor
	default:
		ratio := max(1-c.CutGain*(s.CPU-c.CPUTarget)/s.CPU, 1-c.MaxCut)
		nf := max(hi*ratio, f*(1-c.MaxCut), c.MinFactor)
		if nf >= f {
			s.Reason = ReasonCutSettling
			return f
		}
		s.LastCut = s.Samples
		s.Decision, s.Reason = DecisionCut, ReasonCut
		return nf
	}
	return f
}

// raise returns the factor after a step below the band, given the factor
// f now and the smallest factor lo of the settling samples, and records the
// decision in s.
func (s *State) raise(c Config, f, lo float64) float64 {
	switch {
	case s.LastCut > 0 && s.Samples-s.LastCut <= int64(c.RaiseHold):
		s.Reason = ReasonRaiseHold
	case f >= 1:
		s.Reason = ReasonCeiling
	default:
		want := 1.0
		if s.CPU > 0 {
			want = lo * c.CPUTarget / s.CPU
		}
		nf := min(want, f*(1+c.MaxRaise), 1)
		if nf <= f {
			s.Reason = ReasonRaiseSettle
			return f
		}
		s.Decision, s.Reason = DecisionRaise, ReasonRaise
		return nf
	}
	return f
}

func clamp(v, lo, hi float64) float64 { return min(max(v, lo), hi) }
