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
	ReasonBoost       = "cpu below boostBelow"
	ReasonBoostHeld   = "cpu between boostBelow and boostAbove, boost held"
	ReasonBoostTop    = "cpu below boostBelow, factor at boostFactor"
	ReasonWithdraw    = "cpu above boostAbove, boost withdrawn"
	ReasonWithdrawOne = "cpu above boostAbove for one sample only"
	ReasonSkip        = "sample skipped"
)

// State is the controller's state: what it knows after its last sample. The
// zero State is a controller that has seen nothing (factor 1).
type State struct {
	Factor   float64   // scale of adaptive rules, in [MinFactor, 1], or up to Boost.Factor
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
//
// With the boost on (Boost.Factor > 1) the factor may go above 1: below
// Boost.Below a raise aims at Boost.Below/cpu instead, up to Boost.Factor;
// a boosted factor holds until the CPU is above Boost.Above for two samples,
// then drops back toward 1 by at most MaxCut (a withdrawal counts as a cut
// for CutGap and RaiseHold). So the boost has a hysteresis band of its own
// and the cut's spacing and dwell.
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
	f := clamp(s.Factor, c.MinFactor, ceiling(c)) // the bounds may have moved (SetConfig)
	s.Decision, s.Reason = DecisionHold, ReasonInBand
	switch {
	case s.CPU > c.BandHigh:
		f = s.cut(c, f, hi, prev)
	case f > 1 && s.CPU > c.Boost.Above:
		f = s.withdraw(c, f, prev)
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
	s.Factor = clamp(s.Factor, c.MinFactor, ceiling(c))
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

// withdraw returns the factor after a step above Boost.Above with the
// factor f above 1, given the previous sample prev, and records the
// decision in s. Like a cut it ignores a one-sample spike and keeps
// CutGap; unlike one it is not sized to the heat: the boost is spare
// capacity, given back at once down to 1, and a cut follows if the CPU
// goes on to leave the band.
func (s *State) withdraw(c Config, f, prev float64) float64 {
	switch {
	case prev <= c.Boost.Above:
		s.Reason = ReasonWithdrawOne
	case s.LastCut > 0 && s.Samples-s.LastCut < int64(c.CutGap):
		s.Reason = ReasonCutGap
	default:
		s.LastCut = s.Samples
		s.Decision, s.Reason = DecisionCut, ReasonWithdraw
		return max(1, f*(1-c.MaxCut))
	}
	return f
}

// raise returns the factor after a step below the band, given the factor
// f now and the smallest factor lo of the settling samples, and records the
// decision in s. Up to 1 it aims at CPUTarget; above 1 (the boost, when on
// and the CPU is under Boost.Below) at Boost.Below.
func (s *State) raise(c Config, f, lo float64) float64 {
	boost := c.Boost.Factor > 1 && s.CPU < c.Boost.Below
	top := 1.0
	if boost {
		top = c.Boost.Factor
	}
	switch {
	case s.LastCut > 0 && s.Samples-s.LastCut <= int64(c.RaiseHold):
		s.Reason = ReasonRaiseHold
	case f >= top && boost:
		s.Reason = ReasonBoostTop
	case f > 1 && !boost:
		s.Reason = ReasonBoostHeld
	case f >= top:
		s.Reason = ReasonCeiling
	default:
		want := top
		if s.CPU > 0 {
			want = min(lo*c.CPUTarget/s.CPU, 1)
			if boost {
				want = max(want, lo*c.Boost.Below/s.CPU)
			}
		}
		nf := min(want, f*(1+c.MaxRaise), top)
		if nf <= f {
			s.Reason = ReasonRaiseSettle
			return f
		}
		s.Decision, s.Reason = DecisionRaise, ReasonRaise
		if nf > 1 {
			s.Reason = ReasonBoost
		}
		return nf
	}
	return f
}

// ceiling is the largest factor c allows: 1, or Boost.Factor when the
// boost is on.
func ceiling(c Config) float64 {
	if c.Boost.Factor > 1 {
		return c.Boost.Factor
	}
	return 1
}

func clamp(v, lo, hi float64) float64 { return min(max(v, lo), hi) }
