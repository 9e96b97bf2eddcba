package algo

import (
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/tokenbucket"
)

// newWarmUp builds Guava's SmoothWarmingUp at rate limit/Window: it starts
// cold, ColdFactor times slower, and reaches the full rate after Warmup of
// saturated demand.
func newWarmUp(s *Spec, limit float64, clk clock.Clock) (Limiter, error) {
	window := s.Window.Seconds()
	l, err := tokenbucket.NewWarmingUp(limit/window, s.Warmup,
		tokenbucket.WithClock(clk),
		tokenbucket.WithColdFactor(s.ColdFactor),
	)
	if err != nil {
		return nil, err
	}
	b := &Bucket{window: window, warm: true}
	l.CloneInto(&b.l)
	return b, nil
}
