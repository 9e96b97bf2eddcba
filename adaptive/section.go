package adaptive

import "github.com/flowgate/flowgate/rules"

// FromSection turns the rules document's "adaptive" section into a Config;
// fields the section does not carry keep their defaults. A nil section gives
// Defaults(). Pass the result to NewController with WithConfig, or to
// Controller.SetConfig on a reload.
func FromSection(s *rules.AdaptiveSection) Config {
	c := Defaults()
	if s == nil {
		return c
	}
	c.CPUTarget, c.BandLow, c.BandHigh = s.CPUTarget, s.BandLow, s.BandHigh
	c.MinFactor, c.Period = s.MinFactor, s.Period
	c.CPUSource = CPUSource(s.CPUSource)
	return c.WithDefaults()
}
