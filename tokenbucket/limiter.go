package tokenbucket

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// ErrInvalidArgument is wrapped by every error about a bad rate, period,
// factor or permit count.
var ErrInvalidArgument = errors.New("tokenbucket: invalid argument")

// Limiter is a Guava SmoothRateLimiter: SmoothBursty (NewBursty) or
// SmoothWarmingUp (NewWarmingUp). It is safe for concurrent use. Most callers
// want Acquire (wait for permits) or TryAcquire (take them only if they come
// within a timeout). The zero Limiter is not usable: build one with NewBursty
// or NewWarmingUp, or from another with Clone or CloneInto.
//
// The struct is small on purpose: the flow engine keeps one per user or IP key.
type Limiter struct {
	// word is a bursty limiter's whole state: the instant its bucket is (or
	// was) empty, in nanoseconds since origin. It is changed only by
	// compare-and-swap; see bursty.go. A warming-up limiter does not use it.
	word atomic.Int64
	// rate is the current rate and what was fixed at construction,
	// immutable, shared by clones, replaced whole by SetRate.
	rate atomic.Pointer[rateConfig]
	// origin is clock.Nanotime at construction: time counts from here.
	origin int64
	// warm is a warming-up limiter's Guava state and its mutex; nil for a
	// bursty limiter (see warming.go).
	warm *warmState
}

// rateConfig is a rate and the constants derived from it, with what was
// fixed at construction (copied from rate to rate). Immutable once
// published, so a call that loaded it reads one consistent rate.
type rateConfig struct {
	stable    float64 // Guava's stableIntervalMicros: 1e6 / rate (0 at +Inf)
	interval  float64 // bursty: the stable interval in nanoseconds, 1e9 / rate
	maxP      float64 // maxPermits
	threshold float64 // warming up: thresholdPermits
	slope     float64 // warming up: slope of the cost line above threshold

	// Fixed at construction.
	clk          clock.Clock
	burstNs      int64   // bursty: maxBurstSeconds in nanoseconds, the time a full bucket holds
	burstSeconds float64 // bursty: maxBurstSeconds
	coldFactor   float64 // warming up
	warmup       int64   // warming up: warmupPeriodMicros; -1 marks a bursty limiter
	// WithStoredPermits as given at construction, carried from rate to rate
	// so Clone starts a limiter as the constructor did.
	optStored float64
	hasStored bool
}

// Option configures a Limiter at construction.
type Option func(*settings)

type settings struct {
	clk          clock.Clock
	coldFactor   float64
	burstSeconds float64
	stored       float64
	hasStored    bool
}

// WithClock sets the clock the limiter reads and sleeps on. Default clock.Real().
func WithClock(c clock.Clock) Option { return func(o *settings) { o.clk = c } }

// WithColdFactor sets how much slower than the stable rate a cold warming-up
// limiter starts (Guava's coldFactor). Default 3; must be finite and >= 1.
// Ignored by NewBursty.
func WithColdFactor(f float64) Option { return func(o *settings) { o.coldFactor = f } }

// WithMaxBurstSeconds sets how many seconds of work a bursty limiter may store
// while idle (Guava's maxBurstSeconds). Default 1; must be finite and >= 0.
// Ignored by NewWarmingUp.
func WithMaxBurstSeconds(s float64) Option { return func(o *settings) { o.burstSeconds = s } }

// WithStoredPermits sets the permits stored at construction (clamped to [0, maxPermits]).
// Default: Guava's (bursty starts empty, warming-up starts cold = maxPermits).
func WithStoredPermits(p float64) Option {
	return func(o *settings) { o.stored, o.hasStored = p, true }
}

func newSettings(opts []Option) settings {
	c := settings{coldFactor: 3, burstSeconds: 1}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.clk == nil {
		c.clk = clock.Real()
	}
	return c
}

// NewBursty returns Guava's SmoothBursty: permitsPerSecond spread evenly, and up
// to maxBurstSeconds (default 1) of unused permits stored for a free burst. It
// starts with no stored permits. permitsPerSecond must be > 0; +Inf is allowed.
func NewBursty(permitsPerSecond float64, opts ...Option) (*Limiter, error) {
	c := newSettings(opts)
	var errs []error
	if err := checkRate(permitsPerSecond); err != nil {
		errs = append(errs, err)
	}
	if s := c.burstSeconds; !(s >= 0) || math.IsInf(s, 1) {
		errs = append(errs, fmt.Errorf("%w: maxBurstSeconds %v must be finite and >= 0", ErrInvalidArgument, s))
	}
	if err := checkStored(c); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cfg := &rateConfig{clk: c.clk, burstSeconds: c.burstSeconds, burstNs: burstNanos(c.burstSeconds),
		warmup: -1, optStored: c.stored, hasStored: c.hasStored}
	cfg.setBursty(permitsPerSecond)
	l := &Limiter{origin: clock.Nanotime(c.clk)}
	l.word.Store(cfg.startWord(0))
	l.rate.Store(cfg)
	return l, nil
}

// NewWarmingUp returns Guava's SmoothWarmingUp: it starts cold, serving permits
// coldFactor (default 3) times slower than permitsPerSecond, and ramps up to
// permitsPerSecond over warmupPeriod of saturated demand; left idle for
// warmupPeriod it goes cold again. permitsPerSecond must be > 0 (+Inf is
// allowed) and warmupPeriod >= 0.
func NewWarmingUp(permitsPerSecond float64, warmupPeriod time.Duration, opts ...Option) (*Limiter, error) {
	c := newSettings(opts)
	var errs []error
	if err := checkRate(permitsPerSecond); err != nil {
		errs = append(errs, err)
	}
	if warmupPeriod < 0 {
		errs = append(errs, fmt.Errorf("%w: warmupPeriod %v must be >= 0", ErrInvalidArgument, warmupPeriod))
	}
	if f := c.coldFactor; !(f >= 1) || math.IsInf(f, 1) {
		errs = append(errs, fmt.Errorf("%w: coldFactor %v must be finite and >= 1", ErrInvalidArgument, f))
	}
	if err := checkStored(c); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cfg := &rateConfig{clk: c.clk, coldFactor: c.coldFactor, warmup: int64(warmupPeriod / time.Microsecond),
		optStored: c.stored, hasStored: c.hasStored}
	// Guava's factory: setRate on a fresh limiter, whose maxPermits 0 marks
	// the initial state (cold), then our optional override.
	w := &warmState{}
	w.setRate(cfg, permitsPerSecond, 0, &rateConfig{})
	if c.hasStored {
		w.stored = cfg.initialStored()
	}
	l := &Limiter{origin: clock.Nanotime(c.clk), warm: w}
	l.rate.Store(cfg)
	return l, nil
}

func checkRate(r float64) error {
	if !(r > 0) { // also refuses NaN
		return fmt.Errorf("%w: rate %v must be > 0", ErrInvalidArgument, r)
	}
	return nil
}

func checkStored(c settings) error {
	if c.hasStored && math.IsNaN(c.stored) {
		return fmt.Errorf("%w: stored permits must not be NaN", ErrInvalidArgument)
	}
	return nil
}

// initialStored is what a limiter built at this rate starts with: Guava's
// (bursty empty, warming up cold), or WithStoredPermits clamped.
func (c *rateConfig) initialStored() float64 {
	switch {
	case c.hasStored:
		return max(0, min(c.optStored, c.maxP))
	case c.warmup < 0: // bursty
		return 0
	}
	return c.maxP
}

// Clone returns a new limiter of l's kind, options and current rate, in the
// state a new one starts in (its time counts from now on l's clock): what
// NewBursty or NewWarmingUp with the same arguments would return. It shares
// l's immutable rate data instead of building its own until its first
// SetRate, which is what makes one limiter per user or IP cheap.
func (l *Limiter) Clone() *Limiter {
	n := new(Limiter)
	l.CloneInto(n)
	return n
}

// CloneInto makes dst what Clone would return, in place, so a caller can
// hold limiters by value (one allocation, and one pointer hop, less per
// limiter). dst must be a zero Limiter that nothing uses yet.
func (l *Limiter) CloneInto(dst *Limiter) {
	c := l.rate.Load()
	dst.origin = clock.Nanotime(c.clk)
	if l.warm != nil {
		dst.warm = &warmState{stored: c.initialStored()}
	} else {
		dst.word.Store(c.startWord(0))
	}
	dst.rate.Store(c)
}

// SetRate changes the stable rate as Guava's setRate does: time elapsed so far
// is credited at the old rate, stored permits keep their proportion of
// maxPermits, and the next request still pays the previous request's cost at the
// old rate. permitsPerSecond must be > 0; +Inf is allowed.
//
// On a bursty limiter SetRate does not block and reservations do not wait
// for it: see bursty.go for why swapping the rate alone is exact.
func (l *Limiter) SetRate(permitsPerSecond float64) error {
	if err := checkRate(permitsPerSecond); err != nil {
		return err
	}
	if l.warm != nil {
		l.warm.setRateNow(l, permitsPerSecond)
		return nil
	}
	l.setRateBursty(permitsPerSecond)
	return nil
}

// Rate reports the stable rate in permits per second.
func (l *Limiter) Rate() float64 { return 1e6 / l.rate.Load().stable }

// StableIntervalMicros reports the time one permit costs at the stable
// rate, in microseconds (Guava's stableIntervalMicros): 1e6 / Rate().
func (l *Limiter) StableIntervalMicros() float64 { return l.rate.Load().stable }

// MaxPermits reports the most permits the limiter can store.
func (l *Limiter) MaxPermits() float64 { return l.rate.Load().maxP }

// StoredPermitsAt reports the permits available at now (after Guava's resync), for
// "remaining" headers and snapshots. Does not change state. now is
// clock.Nanotime of the limiter's clock.
func (l *Limiter) StoredPermitsAt(now int64) float64 {
	m := l.micros(now)
	if l.warm != nil {
		return l.warm.storedAt(l, m)
	}
	e := l.word.Load()
	return l.rate.Load().storedAt(e, m*1000)
}

// micros turns a clock.Nanotime reading into Guava's nowMicros: whole
// microseconds since construction. A reading from before construction (the
// engine reads the clock once, then may create a limiter) counts as 0.
func (l *Limiter) micros(now int64) int64 {
	if d := now - l.origin; d > 0 {
		return d / 1000
	}
	return 0
}
