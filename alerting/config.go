package alerting

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// Config holds the alerter's thresholds and timing. It mirrors the rules
// document's "alerting" section field for field. Every field is taken as
// given, zero included (For 0 fires at the first high tick, MinRequests 0
// needs no minimum, ResolveRatio 0 resolves only when nothing is blocked),
// so build one from Defaults rather than from a zero Config.
type Config struct {
	// RejectionRatio is the blocked/(passed+waited+blocked) ratio above which an
	// alert goes pending, in (0, 1]. Default 0.3.
	RejectionRatio float64
	// ResolveRatio is the ratio below which a firing alert resolves, in
	// [0, RejectionRatio]: a ratio hovering around RejectionRatio does not
	// flap. Default 0.8 × RejectionRatio.
	ResolveRatio float64
	// Window is the span the ratio is measured over, at least Interval.
	// Default 1m.
	Window time.Duration
	// For is how long the ratio must stay above RejectionRatio before the
	// alert fires (Prometheus's "for"). Default 30s.
	For time.Duration
	// Interval is the evaluation period of Start. Default 10s.
	Interval time.Duration
	// RepeatInterval is how often a still-firing alert is sent again to a
	// sink that does not set its own (see Repeater). Default 4h, as
	// Alertmanager's repeat_interval: a webhook receiver is reminded, not
	// flooded.
	RepeatInterval time.Duration
	// MinRequests is the fewest calls (passed + waited + blocked) the window must hold
	// for the ratio to count. Default 100: 3 refusals out of 5 calls are noise.
	MinRequests int
}

// Default values of Config.
const (
	DefaultRejectionRatio  = 0.3
	DefaultResolveFraction = 0.8 // ResolveRatio = 0.8 × RejectionRatio
	DefaultWindow          = time.Minute
	DefaultFor             = 30 * time.Second
	DefaultInterval        = 10 * time.Second
	DefaultRepeatInterval  = 4 * time.Hour
	DefaultMinRequests     = 100
	// DefaultName is the alertname of the alerts (WithName).
	DefaultName = "FlowgateHighRejectionRatio"
)

// Defaults returns the default configuration.
func Defaults() Config {
	return Config{
		RejectionRatio: DefaultRejectionRatio,
		ResolveRatio:   DefaultRejectionRatio * DefaultResolveFraction,
		Window:         DefaultWindow,
		For:            DefaultFor,
		Interval:       DefaultInterval,
		RepeatInterval: DefaultRepeatInterval,
		MinRequests:    DefaultMinRequests,
	}
}

// Validate reports every problem of c, errors.Join'ed, each as
// "field: message" with the rules document's field names.
func (c Config) Validate() error {
	var errs []error
	c.Check(func(field, msg string) { errs = append(errs, errors.New(field+": "+msg)) })
	return errors.Join(errs...)
}

// Check calls report with the rules document's field name and the message
// of every problem of c, in field order. Validate is built on it; package
// rules uses it to place each problem in the document ("alerting.window")
// without reading error text.
func (c Config) Check(report func(field, msg string)) {
	bad := func(field, format string, args ...any) { report(field, fmt.Sprintf(format, args...)) }
	okRatio := true
	if math.IsNaN(c.RejectionRatio) || c.RejectionRatio <= 0 || c.RejectionRatio > 1 {
		bad("rejectionRatio", "must be in (0, 1], got %v", c.RejectionRatio)
		okRatio = false
	}
	switch {
	case math.IsNaN(c.ResolveRatio) || c.ResolveRatio < 0 || c.ResolveRatio > 1:
		bad("resolveRatio", "must be in [0, 1], got %v", c.ResolveRatio)
	case okRatio && c.ResolveRatio > c.RejectionRatio:
		bad("resolveRatio", "must be <= rejectionRatio %v, got %v", c.RejectionRatio, c.ResolveRatio)
	}
	if c.Interval <= 0 {
		bad("interval", "must be > 0, got %v", c.Interval)
	}
	if c.Window <= 0 {
		bad("window", "must be > 0, got %v", c.Window)
	} else if c.Interval > 0 && c.Window < c.Interval {
		bad("window", "must be >= interval %v, got %v", c.Interval, c.Window)
	}
	if c.For < 0 {
		bad("for", "must be >= 0, got %v", c.For)
	}
	if c.RepeatInterval <= 0 {
		bad("repeatInterval", "must be > 0, got %v", c.RepeatInterval)
	}
	if c.MinRequests < 0 {
		bad("minRequests", "must be >= 0, got %d", c.MinRequests)
	}
}

// WithResolveDefault returns c with ResolveRatio at its default for c's
// RejectionRatio (DefaultResolveFraction × it, kept in [0, 1] so that a bad
// RejectionRatio is reported once), as New does when no resolve ratio is
// given: for a rules document that sets rejectionRatio alone.
func (c Config) WithResolveDefault() Config {
	c.ResolveRatio = min(1, max(0, c.RejectionRatio*DefaultResolveFraction))
	return c
}

// Option configures an Alerter.
type Option func(*options)

type options struct {
	cfg          Config
	resolveGiven bool // else ResolveRatio follows RejectionRatio
	clk          clock.Clock
	log          *slog.Logger
	sinks        []Sink
	name         string
	labels       map[string]string
	overall      bool
	queue        int
	drainTimeout time.Duration
	snapshots    func() flow.Snapshot
}

func newOptions(opts []Option) options {
	o := options{
		cfg: Defaults(), clk: clock.Real(), name: DefaultName, overall: true,
		queue: DefaultQueueSize, drainTimeout: DefaultDrainTimeout,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if !o.resolveGiven {
		o.cfg = o.cfg.WithResolveDefault()
	}
	return o
}

// Defaults of the delivery options.
const (
	DefaultQueueSize    = 64
	DefaultDrainTimeout = 5 * time.Second
)

// WithConfig replaces the whole configuration, every field as given (see
// Config); options after it adjust single fields.
func WithConfig(c Config) Option {
	return func(o *options) { o.cfg, o.resolveGiven = c, true }
}

// WithRejectionRatio sets the ratio above which an alert goes pending
// (default 0.3). Unless set otherwise, ResolveRatio follows at 0.8 × it.
func WithRejectionRatio(r float64) Option { return func(o *options) { o.cfg.RejectionRatio = r } }

// WithResolveRatio sets the ratio below which a firing alert resolves
// (default 0.8 × the rejection ratio).
func WithResolveRatio(r float64) Option {
	return func(o *options) { o.cfg.ResolveRatio, o.resolveGiven = r, true }
}

// WithWindow sets the span the ratio is measured over (default 1m).
func WithWindow(d time.Duration) Option { return func(o *options) { o.cfg.Window = d } }

// WithFor sets how long the ratio must stay high before firing (default 30s).
func WithFor(d time.Duration) Option { return func(o *options) { o.cfg.For = d } }

// WithInterval sets the evaluation period of Start (default 10s).
func WithInterval(d time.Duration) Option { return func(o *options) { o.cfg.Interval = d } }

// WithRepeatInterval sets how often a still-firing alert is re-sent
// (default 4h).
func WithRepeatInterval(d time.Duration) Option {
	return func(o *options) { o.cfg.RepeatInterval = d }
}

// WithMinRequests sets the fewest calls the window must hold for the ratio
// to count (default 100).
func WithMinRequests(n int) Option { return func(o *options) { o.cfg.MinRequests = n } }

// WithClock sets the clock that stamps samples and alerts and paces Start.
// Give it the engine's clock. Default clock.Real(). On a clock.Fake, drive
// the alerter with Evaluate rather than Start: Fake's Sleep returns at once.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clk = c } }

// WithLogger logs state changes (Info) and sink failures and drops (Warn).
// Default: silent.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithSink adds a sink; every sink gets every notification on its own
// queue and goroutine. Nil sinks are ignored.
func WithSink(s Sink) Option {
	return func(o *options) {
		if s != nil {
			o.sinks = append(o.sinks, s)
		}
	}
}

// WithName sets the alertname (default "FlowgateHighRejectionRatio").
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithLabels adds static labels to every alert (e.g. service, severity).
// They never replace alertname or resource. The map is copied.
func WithLabels(labels map[string]string) Option {
	return func(o *options) {
		if o.labels == nil {
			o.labels = make(map[string]string, len(labels))
		}
		for k, v := range labels {
			o.labels[k] = v
		}
	}
}

// WithOverall turns the alert on all traffic (Resource "") on or off.
// Default on.
func WithOverall(on bool) Option { return func(o *options) { o.overall = on } }

// WithQueueSize bounds each sink's queue of undelivered notifications
// (default 64); a notification that finds its queue full is dropped and
// counted in Stats.
func WithQueueSize(n int) Option { return func(o *options) { o.queue = n } }

// WithSnapshots makes the alerter read its counts from f instead of the
// engine's Snapshot (New's engine may then be nil): for a program whose
// decisions are not an engine's, such as the token service, whose
// tokenrpc.Server.Snapshot counts what it granted and refused. Only
// Resources' Resource, Passed and Blocked are read.
func WithSnapshots(f func() flow.Snapshot) Option { return func(o *options) { o.snapshots = f } }

// WithDrainTimeout bounds how long Close waits for queued notifications to
// be delivered before cancelling the sinks (default 5s).
func WithDrainTimeout(d time.Duration) Option { return func(o *options) { o.drainTimeout = d } }
