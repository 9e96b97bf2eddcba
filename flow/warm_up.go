package flow

import (
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/warmup"
)

// newWarmUp builds Guava's SmoothWarmingUp at rate limit/Window: it starts
// cold, ColdFactor times slower, and reaches the full rate after Warmup of
// saturated demand.
func newWarmUp(r *Rule, limit float64, clk clock.Clock) (limiter, error) {
	window := r.Window.Seconds()
	l, err := warmup.NewWarmingUp(limit/window, r.Warmup,
		warmup.WithClock(clk),
		warmup.WithColdFactor(r.ColdFactor),
	)
	if err != nil {
		return nil, err
	}
	b := &tokenBucket{window: window, warm: true}
	l.CloneInto(&b.l)
	return b, nil
}
