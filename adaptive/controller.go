package adaptive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// Controller samples the CPU and scales the engine's adaptive rules to keep
// it near the target (see State.Next for the rule), and optionally runs the
// system guard. Step does one sample and update; Start runs Step every
// Period on its own goroutine until Close. Its methods are safe for
// concurrent use.
type Controller struct {
	eng     *flow.Engine
	sampler Sampler
	source  CPUSource // what sampler measures
	clk     clock.Clock
	log     *slog.Logger
	err     error // an invalid configuration: Step refuses to act

	mu        sync.Mutex // serialises Step, SetConfig, Start and Close
	cfg       Config     // with defaults
	st        State
	published float64 // the factor last handed to the engine
	guard     guard
	started   bool
	closed    bool
	cancel    context.CancelFunc
	done      chan struct{}

	factor atomic.Uint64 // published, float64 bits: Factor never locks
	sample atomic.Uint64 // last usable sample, float64 bits: CPU never locks
}

// Option configures a Controller.
type Option func(*Controller)

// WithSampler sets the CPU sampler; default NewSamplerFor(Config.CPUSource):
// the cgroup when it limits this process's CPU, else the process's own CPU
// time. CPUSource then reports SourceCustom.
func WithSampler(s Sampler) Option { return func(c *Controller) { c.sampler = s } }

// WithClock sets the clock that paces Start and stamps steps; default
// clock.Real().
func WithClock(clk clock.Clock) Option { return func(c *Controller) { c.clk = clk } }

// WithLogger logs every change of the factor and of the system guard (Info)
// and skipped samples (Debug). Default: silent.
func WithLogger(l *slog.Logger) Option { return func(c *Controller) { c.log = l } }

// WithConfig replaces the whole configuration (zero fields take defaults);
// options after it adjust single fields.
func WithConfig(cfg Config) Option { return func(c *Controller) { c.cfg = cfg } }

// WithTarget sets the CPU target (default 0.80).
func WithTarget(cpu float64) Option { return func(c *Controller) { c.cfg.CPUTarget = cpu } }

// WithBand sets the hysteresis band (default [0.70, 0.88]).
func WithBand(low, high float64) Option {
	return func(c *Controller) { c.cfg.BandLow, c.cfg.BandHigh = low, high }
}

// WithAlphas sets the EWMA weights for rising and falling CPU (default 0.6,
// 0.25).
func WithAlphas(up, down float64) Option {
	return func(c *Controller) { c.cfg.AlphaUp, c.cfg.AlphaDown = up, down }
}

// WithMinFactor sets the floor of the factor (default 0.1).
func WithMinFactor(f float64) Option { return func(c *Controller) { c.cfg.MinFactor = f } }

// WithPeriod sets the sampling period of Start (default 250ms).
func WithPeriod(d time.Duration) Option { return func(c *Controller) { c.cfg.Period = d } }

// WithBoost turns the idle-CPU boost on: while the smoothed CPU is below
// below, adaptive rules may rise up to factor times their base limits (see
// Config.Boost; boostAbove keeps its default).
func WithBoost(factor, below float64) Option {
	return func(c *Controller) { c.cfg.Boost.Factor, c.cfg.Boost.Below = factor, below }
}

// WithSystemGuard turns the system guard on above the given smoothed CPU.
func WithSystemGuard(cpu float64) Option {
	return func(c *Controller) { c.cfg.SystemGuard.CPU = cpu }
}

// NewController returns a controller of eng's adaptive rules, starting from
// the engine's current factor. It starts nothing: call Start, or Step
// yourself. An invalid configuration (or a nil engine) makes Err and every
// Step return the problem, and the controller never touches the engine.
func NewController(eng *flow.Engine, opts ...Option) *Controller {
	c := &Controller{eng: eng, clk: clock.Real()}
	for _, o := range opts {
		o(c)
	}
	if c.clk == nil {
		c.clk = clock.Real()
	}
	if err := c.cfg.Validate(); err != nil {
		c.err = fmt.Errorf("adaptive: config: %w", err)
	}
	if eng == nil {
		c.err = errors.Join(c.err, errors.New("adaptive: nil engine"))
	}
	c.cfg = c.cfg.WithDefaults()
	c.published = 1
	if eng != nil {
		c.published = eng.AdaptiveFactor()
	}
	c.st.Factor = c.published
	c.factor.Store(math.Float64bits(c.published))
	switch {
	case c.sampler != nil:
		c.source = SourceCustom
	case c.err == nil:
		// Real counters need the real clock, whatever c.clk is.
		s, src, err := NewSamplerFor(c.cfg.CPUSource)
		if err != nil {
			c.err = err
			break
		}
		c.sampler, c.source = s, src
	}
	if c.err != nil {
		if c.log != nil {
			c.log.Error("adaptive: controller disabled", "err", c.err)
		}
		return c
	}
	if c.log != nil && c.source != SourceCustom { // the caller chose a custom one and knows it
		c.log.Info("adaptive: cpu source", "source", string(c.source), "configured", string(c.cfg.CPUSource))
	}
	return c
}

// CPUSource returns what the controller's CPU samples measure: SourceCgroup,
// SourceProcess or SourceHost (what SourceAuto chose), SourceCustom for a
// WithSampler sampler, "" when the controller is disabled (see Err).
func (c *Controller) CPUSource() CPUSource { return c.source }

// CPUSourceName is string(CPUSource()), for metrics.WithAdaptive, which
// exports it as flowgate_cpu_source_info{source}.
func (c *Controller) CPUSourceName() string { return string(c.source) }

// Err reports why the controller cannot act (invalid configuration, nil
// engine), or nil.
func (c *Controller) Err() error { return c.err }

// Factor returns the scale now applied to adaptive rules, in [MinFactor, 1],
// or up to Config.Boost.Factor while the idle-CPU boost is on.
func (c *Controller) Factor() float64 { return math.Float64frombits(c.factor.Load()) }

// CPU returns the last usable CPU sample, 0..1 (0 before the first). It
// never locks, for exporters (metrics.AdaptiveSource); State has the
// smoothed value.
func (c *Controller) CPU() float64 { return math.Float64frombits(c.sample.Load()) }

// State returns what the controller knows: factor, smoothed CPU, the last
// decision and its reason, and what it handed to the engine.
func (c *Controller) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st
	s.Published, s.SystemLimit = c.published, c.guard.limit
	return s
}

// Config returns the configuration in force, with defaults filled in.
func (c *Controller) Config() Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg
}

// SetConfig validates cfg and, when it is good, makes it the configuration
// from the next step on, keeping the controller's state (the rules
// document's "adaptive" section is reloaded this way). On error nothing
// changes.
func (c *Controller) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("adaptive: config: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg = cfg.WithDefaults()
	if c.cfg.SystemGuard.CPU == 0 && c.guard.limit != 0 && c.eng != nil {
		c.eng.SetSystemLimit(0)
		c.guard = guard{}
	}
	return nil
}

// Step takes one CPU sample and updates the factor (and the system guard).
// A sample the sampler could not take is counted in State().Skipped and
// returned as an error wrapping it; nothing else changes.
func (c *Controller) Step() error {
	if c.err != nil {
		return c.err
	}
	x, err := c.sampler.CPU()
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	if err != nil {
		c.st.Skipped++
		c.st.Decision, c.st.Reason, c.st.At = DecisionSkip, ReasonSkip, now
		return fmt.Errorf("adaptive: step: %w", err)
	}
	c.st = c.st.Next(c.cfg, x, now)
	c.sample.Store(math.Float64bits(c.st.Sample))
	c.publish()
	if c.cfg.SystemGuard.CPU > 0 {
		c.guardStep()
	}
	return nil
}

// publish hands the factor to the engine when it moved by MinChange or more,
// or reached 1, the floor or the boost's ceiling, so small wobbles do not
// recompute every rule.
func (c *Controller) publish() {
	f, pub := c.st.Factor, c.published
	if f == pub {
		return
	}
	if math.Abs(f-pub) < c.cfg.MinChange*pub && f != 1 && f != c.cfg.MinFactor && f != c.cfg.Boost.Factor {
		return
	}
	c.eng.SetAdaptiveFactor(f)
	c.published = f
	c.factor.Store(math.Float64bits(f))
	if c.log != nil {
		c.log.Info("adaptive: factor changed",
			"from", pub, "to", f, "cpu", c.st.CPU, "sample", c.st.Sample,
			"decision", c.st.Decision.String(), "reason", c.st.Reason)
	}
}

// Start runs Step every Period on a goroutine owned by the controller until
// Close. Calling it again, or after Close, does nothing.
func (c *Controller) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.closed || c.err != nil {
		return
	}
	c.started = true
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	go c.loop(ctx, c.done)
}

func (c *Controller) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		c.mu.Lock()
		period := c.cfg.Period
		c.mu.Unlock()
		if c.clk.Sleep(ctx, period) != nil {
			return
		}
		if err := c.Step(); err != nil && c.log != nil {
			c.log.Debug("adaptive: sample skipped", "err", err)
		}
	}
}

// Close stops the goroutine of Start and waits for it, then gives the engine
// back its full rates (factor 1) and switches the system guard off: a
// controller that no longer watches must not leave rules throttled. It is
// idempotent and always returns nil.
func (c *Controller) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if c.err == nil {
		c.mu.Lock()
		c.eng.SetAdaptiveFactor(1)
		c.eng.SetSystemLimit(0)
		c.published, c.guard.limit = 1, 0
		c.factor.Store(math.Float64bits(1))
		c.mu.Unlock()
	}
	return nil
}
