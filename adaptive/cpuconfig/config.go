package cpuconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Config holds the settings of package adaptive's controller and system
// guard; this package owns each of them and its default. A zero field
// means "use the default" (see WithDefaults), so a document that sets only
// cpuTarget is valid. The rules document's "adaptive" section is read into
// a Config (package rules sets the fields it carries, then reports Check's
// problems under "adaptive."); its JSON names are the ones UnmarshalJSON
// reads.
type Config struct {
	// CPUTarget is the utilisation the controller steers to. Default 0.80.
	CPUTarget float64
	// BandLow <= CPUTarget <= BandHigh, BandLow < BandHigh: the hysteresis band;
	// inside it the factor is held. Defaults follow CPUTarget: 0.10 below
	// and 0.08 above it (0.70 and 0.88 for the default target), rounded to
	// hundredths and kept inside (0, 1) and on their side of the target.
	BandLow, BandHigh float64
	// MinFactor is the floor of the factor. Default 0.1.
	MinFactor float64
	// Period is the sampling period of the controller's Start. Default 250ms: CFS enforces
	// quotas in 100ms periods, so much faster sampling aliases.
	Period time.Duration
	// AlphaUp and AlphaDown are the EWMA weights of a new sample when the CPU
	// rises and when it falls: react fast to heat, slowly to relief.
	// Defaults 0.6 and 0.25.
	AlphaUp, AlphaDown float64
	// MaxCut is the largest fraction of the factor removed by one cut.
	// Default 0.5.
	MaxCut float64
	// MaxRaise is the largest relative raise per step. Default 0.05.
	MaxRaise float64
	// CutGap is the least number of samples between two cuts. Default 2.
	CutGap int
	// RaiseHold is the number of samples after a cut during which the factor
	// does not rise. Default 8.
	RaiseHold int
	// Settle is the number of samples the CPU signal needs to show a change of
	// the factor (dead time, lag and smoothing). A step sizes its cut (raise)
	// against the largest (smallest) factor in force over that many samples,
	// so it does not cut again for heat a previous cut has already answered.
	// Default 6; at most MaxSettle.
	Settle int
	// CutGain scales the proportional cut: the factor is multiplied by
	// 1 - CutGain*(cpu-target)/cpu. A gain above 1 allows for the idle share
	// of CPU that does not fall with the admitted rate. Default 1.15.
	CutGain float64
	// MinChange is the least relative change published to the engine.
	// Default 0.01.
	MinChange float64
	// SystemGuard is Sentinel-style system protection; off by default.
	SystemGuard SystemGuard
	// Boost lets the factor rise above 1 while the CPU is idle; off by
	// default.
	Boost Boost
	// CPUSource is what the default sampler measures (see CPUSource):
	// "auto" (default: the cgroup when it limits this process's CPU, else
	// the process), "cgroup", "process" or "host". It is read once, by
	// adaptive.NewController; its SetConfig does not change the sampler,
	// and a sampler given with adaptive.WithSampler ignores it.
	CPUSource CPUSource
}

// SystemGuard configures system protection (Sentinel's BBR idea): while the
// smoothed CPU is above CPU, an inbound call is admitted only while the
// engine's in-flight calls are at most the best completion rate seen
// recently times the smallest response time.
type SystemGuard struct {
	// CPU is the smoothed-CPU threshold; 0 switches the guard off.
	CPU float64
	// MinInFlight is the least in-flight bound the guard ever sets, so a
	// cold or idle engine is never shut. Default 1, as Sentinel.
	MinInFlight int64
}

// Boost configures the idle-CPU boost: while the smoothed CPU is below
// Below, the controller may raise adaptive rules above their base limits,
// up to Factor times them (and a rule's BoostLimit), with the steps, gaps
// and holds of its ordinary raises. Once the CPU is above Above for two
// samples in a row, the boost is withdrawn at once, as far as MaxCut
// allows; between Below and Above it holds. Those two thresholds are the
// boost's hysteresis: a CPU hovering at one of them moves the factor one
// way only.
type Boost struct {
	// Factor is the most the factor may reach, > 1 and at most MaxBoost;
	// 0 (the default) switches the boost off.
	Factor float64
	// Below is the smoothed CPU under which the boost may rise; below
	// BandLow and Above. Default 0.5, or 5/7 of BandLow when that is less
	// (so it stays under a lower band).
	Below float64
	// Above is the smoothed CPU over which the boost is withdrawn. Default
	// halfway between Below and BandLow (0.6 with the default band); at
	// most BandHigh.
	Above float64
}

// MaxBoost bounds Boost.Factor: a boost is for idle capacity the base
// limit leaves unused, not a replacement for a limit set too low.
const MaxBoost = 10

// DefaultBoostBelow is Boost.Below's default: the seed's limiter went to
// 1.5× its base rate under 50% CPU.
const DefaultBoostBelow = 0.5

// MaxSettle bounds Config.Settle: the state keeps that much factor history
// in a fixed array, so updating it never allocates.
const MaxSettle = 32

// Defaults returns the default configuration.
func Defaults() Config {
	return Config{
		CPUTarget: 0.80, BandLow: 0.70, BandHigh: 0.88, MinFactor: 0.1,
		Period: 250 * time.Millisecond, AlphaUp: 0.6, AlphaDown: 0.25,
		MaxCut: 0.5, MaxRaise: 0.05, CutGap: 2, RaiseHold: 8, Settle: 6,
		CutGain: 1.15, MinChange: 0.01,
		SystemGuard: SystemGuard{MinInFlight: 1}, CPUSource: SourceAuto,
		Boost: Boost{Below: DefaultBoostBelow, Above: 0.6},
	}
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	d := Defaults()
	setF := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	setF(&c.CPUTarget, d.CPUTarget)
	// The band follows the target, so a target set alone stays inside it
	// (a target out of range keeps the fixed band: Check reports the target).
	if t := c.CPUTarget; t > 0 && t < 1 {
		d.BandLow = min(t, max(0.01, round2(t-(d.CPUTarget-d.BandLow))))
		d.BandHigh = max(t, min(0.99, round2(t+(d.BandHigh-d.CPUTarget))))
	}
	setF(&c.BandLow, d.BandLow)
	setF(&c.BandHigh, d.BandHigh)
	setF(&c.MinFactor, d.MinFactor)
	setF(&c.AlphaUp, d.AlphaUp)
	setF(&c.AlphaDown, d.AlphaDown)
	setF(&c.MaxCut, d.MaxCut)
	setF(&c.MaxRaise, d.MaxRaise)
	setF(&c.CutGain, d.CutGain)
	setF(&c.MinChange, d.MinChange)
	if c.Period == 0 {
		c.Period = d.Period
	}
	if c.CutGap == 0 {
		c.CutGap = d.CutGap
	}
	if c.RaiseHold == 0 {
		c.RaiseHold = d.RaiseHold
	}
	if c.Settle == 0 {
		c.Settle = d.Settle
	}
	if c.SystemGuard.MinInFlight == 0 {
		c.SystemGuard.MinInFlight = d.SystemGuard.MinInFlight
	}
	if c.CPUSource == "" {
		c.CPUSource = SourceAuto
	}
	// The boost's thresholds follow the band too: under the default band
	// 0.5 and 0.6, and always under bandLow when it allows.
	setF(&c.Boost.Below, min(DefaultBoostBelow, round2(c.BandLow*5/7)))
	if c.Boost.Above == 0 && c.Boost.Below > 0 && c.Boost.Below < c.BandLow {
		c.Boost.Above = round2(c.Boost.Below + (c.BandLow-c.Boost.Below)/2)
	}
	setF(&c.Boost.Above, c.BandLow) // a Below at or over the band: Check reports it
	return c
}

// round2 rounds to hundredths, so 0.8-0.1 reads 0.7.
func round2(f float64) float64 { return math.Round(f*100) / 100 }

// Validate reports every problem of c (after defaults), errors.Join'ed, each
// as "field: message" with the JSON field name.
func (c Config) Validate() error {
	var errs []error
	c.Check(func(field, msg string) { errs = append(errs, errors.New(field+": "+msg)) })
	return errors.Join(errs...)
}

// Check calls report with the JSON field name and the message of every
// problem of c (after defaults), in field order. Validate is built on it;
// package rules uses it to place each problem in the document
// ("adaptive.cpuTarget") without reading error text.
func (c Config) Check(report func(field, msg string)) {
	c = c.WithDefaults()
	bad := func(field, format string, args ...any) { report(field, fmt.Sprintf(format, args...)) }
	c.checkBand(bad)
	if math.IsNaN(c.MinFactor) || c.MinFactor <= 0 || c.MinFactor > 1 {
		bad("minFactor", "must be in (0, 1], got %v", c.MinFactor)
	}
	if c.Period < 0 {
		bad("period", "must be > 0, got %v", c.Period)
	}
	c.checkSteps(bad)
	g := c.SystemGuard
	if math.IsNaN(g.CPU) || g.CPU < 0 || g.CPU > 1 {
		bad("systemCPU", "must be in [0, 1] (0 = off), got %v", g.CPU)
	}
	if g.MinInFlight < 1 {
		bad("systemMinInFlight", "must be >= 1, got %d", g.MinInFlight)
	}
	if _, err := ParseCPUSource(string(c.CPUSource)); err != nil {
		bad("cpuSource", "must be auto, cgroup, process or host, got %q", c.CPUSource)
	}
	c.checkBoost(bad)
}

// checkBoost checks the idle-CPU boost: a factor of 0 (off) or in
// (1, MaxBoost], and 0 < boostBelow < boostAbove <= bandHigh, with
// boostBelow under bandLow so the boost never rises inside the band.
// The thresholds are checked only with the boost on: their defaults follow
// the band, and a band low enough leaves no room under it.
func (c Config) checkBoost(bad func(field, format string, args ...any)) {
	b := c.Boost
	if math.IsNaN(b.Factor) || b.Factor < 0 || (b.Factor > 0 && b.Factor <= 1) || b.Factor > MaxBoost {
		bad("boostFactor", "must be 0 (off) or in (1, %d], got %v", MaxBoost, b.Factor)
	}
	switch {
	case b.Factor == 0:
	case math.IsNaN(b.Below) || b.Below <= 0 || b.Below >= 1:
		bad("boostBelow", "must be in (0, 1), got %v", b.Below)
	case b.Below >= c.BandLow:
		bad("boostBelow", "must be below bandLow %v, got %v", c.BandLow, b.Below)
	case math.IsNaN(b.Above) || b.Above <= b.Below || b.Above > c.BandHigh:
		bad("boostAbove", "must be in (boostBelow %v, bandHigh %v], got %v", b.Below, c.BandHigh, b.Above)
	}
}

// checkBand checks the target and the band around it: each in (0, 1),
// and low <= target <= high with low < high. A bound already out of range
// is not compared with the others.
func (c Config) checkBand(bad func(field, format string, args ...any)) {
	open01 := func(field string, v float64) bool {
		if math.IsNaN(v) || v <= 0 || v >= 1 {
			bad(field, "must be in (0, 1), got %v", v)
			return false
		}
		return true
	}
	okT := open01("cpuTarget", c.CPUTarget)
	okL := open01("bandLow", c.BandLow)
	okH := open01("bandHigh", c.BandHigh)
	if okL && okH && c.BandLow >= c.BandHigh {
		bad("bandLow", "must be below bandHigh %v, got %v", c.BandHigh, c.BandLow)
	} else if okT && okL && c.BandLow > c.CPUTarget {
		bad("bandLow", "must be <= cpuTarget %v, got %v", c.CPUTarget, c.BandLow)
	}
	if okT && okH && c.BandHigh < c.CPUTarget {
		bad("bandHigh", "must be >= cpuTarget %v, got %v", c.CPUTarget, c.BandHigh)
	}
}

// checkSteps checks the smoothing weights and the sizes and spacing of the
// controller's steps.
func (c Config) checkSteps(bad func(field, format string, args ...any)) {
	for _, a := range []struct {
		name string
		v    float64
	}{{"alphaUp", c.AlphaUp}, {"alphaDown", c.AlphaDown}, {"maxCut", c.MaxCut}} {
		if math.IsNaN(a.v) || a.v <= 0 || a.v > 1 {
			bad(a.name, "must be in (0, 1], got %v", a.v)
		}
	}
	if math.IsNaN(c.MaxRaise) || c.MaxRaise < 0 || math.IsInf(c.MaxRaise, 0) {
		bad("maxRaise", "must be >= 0, got %v", c.MaxRaise)
	}
	if math.IsNaN(c.CutGain) || c.CutGain <= 0 || math.IsInf(c.CutGain, 0) {
		bad("cutGain", "must be > 0, got %v", c.CutGain)
	}
	if math.IsNaN(c.MinChange) || c.MinChange < 0 || c.MinChange >= 1 {
		bad("minChange", "must be in [0, 1), got %v", c.MinChange)
	}
	if c.CutGap < 1 {
		bad("cutGap", "must be >= 1, got %d", c.CutGap)
	}
	if c.RaiseHold < 0 {
		bad("raiseHold", "must be >= 0, got %d", c.RaiseHold)
	}
	if c.Settle < 1 || c.Settle > MaxSettle {
		bad("settle", "must be in [1, %d], got %d", MaxSettle, c.Settle)
	}
}

// configJSON is the JSON form: flat, camelCase, durations as strings.
type configJSON struct {
	CPUTarget         float64 `json:"cpuTarget,omitempty"`
	BandLow           float64 `json:"bandLow,omitempty"`
	BandHigh          float64 `json:"bandHigh,omitempty"`
	MinFactor         float64 `json:"minFactor,omitempty"`
	Period            string  `json:"period,omitempty"`
	AlphaUp           float64 `json:"alphaUp,omitempty"`
	AlphaDown         float64 `json:"alphaDown,omitempty"`
	MaxCut            float64 `json:"maxCut,omitempty"`
	MaxRaise          float64 `json:"maxRaise,omitempty"`
	CutGap            int     `json:"cutGap,omitempty"`
	RaiseHold         int     `json:"raiseHold,omitempty"`
	Settle            int     `json:"settle,omitempty"`
	CutGain           float64 `json:"cutGain,omitempty"`
	MinChange         float64 `json:"minChange,omitempty"`
	SystemCPU         float64 `json:"systemCPU,omitempty"`
	SystemMinInFlight int64   `json:"systemMinInFlight,omitempty"`
	CPUSource         string  `json:"cpuSource,omitempty"`
	BoostFactor       float64 `json:"boostFactor,omitempty"`
	BoostBelow        float64 `json:"boostBelow,omitempty"`
	BoostAbove        float64 `json:"boostAbove,omitempty"`
}

// UnmarshalJSON decodes the JSON form of a Config strictly:
// unknown fields and bad duration strings are errors naming the field. It
// does not validate values; call Validate.
func (c *Config) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j configJSON
	if err := dec.Decode(&j); err != nil {
		return err
	}
	var period time.Duration
	if j.Period != "" {
		d, err := time.ParseDuration(j.Period)
		if err != nil {
			return fmt.Errorf("period: %q: %w", j.Period, err)
		}
		if d <= 0 {
			return fmt.Errorf("period: must be > 0, got %q", j.Period)
		}
		period = d
	}
	*c = Config{
		CPUTarget: j.CPUTarget, BandLow: j.BandLow, BandHigh: j.BandHigh,
		MinFactor: j.MinFactor, Period: period, AlphaUp: j.AlphaUp,
		AlphaDown: j.AlphaDown, MaxCut: j.MaxCut, MaxRaise: j.MaxRaise,
		CutGap: j.CutGap, RaiseHold: j.RaiseHold, Settle: j.Settle,
		CutGain: j.CutGain, MinChange: j.MinChange,
		SystemGuard: SystemGuard{CPU: j.SystemCPU, MinInFlight: j.SystemMinInFlight},
		CPUSource:   CPUSource(j.CPUSource),
		Boost:       Boost{Factor: j.BoostFactor, Below: j.BoostBelow, Above: j.BoostAbove},
	}
	return nil
}

// MarshalJSON encodes c in the form UnmarshalJSON reads; zero fields are
// left out.
func (c Config) MarshalJSON() ([]byte, error) {
	j := configJSON{
		CPUTarget: c.CPUTarget, BandLow: c.BandLow, BandHigh: c.BandHigh,
		MinFactor: c.MinFactor, AlphaUp: c.AlphaUp, AlphaDown: c.AlphaDown,
		MaxCut: c.MaxCut, MaxRaise: c.MaxRaise, CutGap: c.CutGap,
		RaiseHold: c.RaiseHold, Settle: c.Settle, CutGain: c.CutGain,
		MinChange: c.MinChange, SystemCPU: c.SystemGuard.CPU,
		SystemMinInFlight: c.SystemGuard.MinInFlight, CPUSource: string(c.CPUSource),
		BoostFactor: c.Boost.Factor, BoostBelow: c.Boost.Below, BoostAbove: c.Boost.Above,
	}
	if c.Period != 0 {
		j.Period = c.Period.String()
	}
	return json.Marshal(j)
}
