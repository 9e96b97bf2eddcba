package warmup

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// ErrInvalidArgument is wrapped by every error about a bad rate, period,
// factor or permit count.
var ErrInvalidArgument = errors.New("warmup: invalid argument")

// Limiter is a Guava SmoothRateLimiter: SmoothBursty (NewBursty) or
// SmoothWarmingUp (NewWarmingUp). It is safe for concurrent use. Most callers
// want Acquire (wait for permits) or TryAcquire (take them only if they come
// within a timeout).
//
// The struct is small on purpose: the flow engine keeps one per user or IP key.
type Limiter struct {
	// words hold the mutable state, two words changed together by one
	// 16-byte compare-and-swap (see reserve.go and pair): nextFree (Guava's
	// nextFreeTicketMicros, with the rate version in its top byte) and the
	// stored permits. A grant costs one CAS; a refusal reads two words.
	// Three words, so an aligned pair always fits inside, and inline, so
	// reaching the state costs no pointer hop (a cache miss when the engine
	// walks thousands of per-key limiters).
	words [3]uint64
	// rate is the current rate and its derived constants, immutable,
	// replaced whole by SetRate.
	rate atomic.Pointer[rateConfig]
	// guard makes the two-word CAS atomic where the CPU has no 16-byte CAS.
	guard sync.Mutex

	// Fixed at construction.
	param  float64 // bursty: maxBurstSeconds; warming up: coldFactor
	warmup int64   // warming up: warmupPeriodMicros; -1 marks a bursty limiter
	origin int64   // clock.Nanotime at construction: micros count from here
	clk    clock.Clock
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
	l := &Limiter{param: c.burstSeconds, warmup: -1, clk: c.clk}
	l.start(permitsPerSecond, c)
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
	l := &Limiter{param: c.coldFactor, warmup: int64(warmupPeriod / time.Microsecond), clk: c.clk}
	l.start(permitsPerSecond, c)
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

// start is Guava's factory: setRate on a fresh limiter (maxPermits 0 marks the
// initial state), then our optional override of the stored permits.
func (l *Limiter) start(rate float64, c settings) {
	l.origin = clock.Nanotime(l.clk)
	cfg := new(rateConfig) // all zero: maxPermits 0 marks the initial state
	st := state{rateConfig: cfg}
	l.setRate(&st, cfg, rate, 0)
	cfg.optStored, cfg.hasStored = c.stored, c.hasStored
	if c.hasStored {
		st.stored = cfg.initialStored(l.warmup < 0)
	}
	p := l.pair()
	p[0], p[1] = encodeNext(st.next, 0), math.Float64bits(st.stored)
	l.rate.Store(cfg)
}

// Clone returns a new limiter of l's kind, options and current rate, in the
// state a new one starts in (its time counts from now on l's clock): what
// NewBursty or NewWarmingUp with the same arguments would return. It shares
// l's immutable rate data (a 64-byte block) instead of building its own
// until its first SetRate, which is what makes one limiter per user or IP
// cheap.
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
	dst.param, dst.warmup, dst.clk, dst.origin = l.param, l.warmup, l.clk, clock.Nanotime(l.clk)
	p := dst.pair()
	p[0], p[1] = encodeNext(0, c.ver), math.Float64bits(c.initialStored(l.warmup < 0))
	dst.rate.Store(c)
}

// Restart puts l, a limiter CloneInto built from a limiter of the same
// kind and options as from (the same rule's prototypes), in the state
// from.Clone would start in now, keeping l's own origin, while other calls
// may still be using l: they see either the old state or the new one,
// never a mix, as with SetRate. It writes only the state words (with one
// CAS) and the rate pointer, so a table can hand a limiter on to a new key
// while a call for the key before it is still finishing; that call may
// then take its permits from the new key's limiter. It allocates only when
// l runs under another rate configuration than from's that happens to
// carry the same version number.
func (l *Limiter) Restart(from *Limiter) {
	c := from.rate.Load()
	stored := math.Float64bits(c.initialStored(l.warmup < 0))
	for {
		old, w0, w1 := l.settled()
		next := l.micros(clock.Nanotime(l.clk)) // what a clone made now counts as 0
		cfg := c
		if cfg != old && cfg.ver == old.ver {
			// Readers pair the words with the rate by version: a new
			// configuration must carry a new one.
			cp := *c
			cp.ver = (old.ver + 1) & 0xff
			cfg = &cp
		}
		if l.cas(w0, w1, encodeNext(next, cfg.ver), stored) {
			if cfg != old {
				l.rate.Store(cfg)
			}
			return
		}
	}
}

// settled returns the state words and the rate they were written under,
// waiting out a SetRate or Restart between its CAS of the words and its
// store of the rate.
func (l *Limiter) settled() (old *rateConfig, w0, w1 uint64) {
	for spins := 0; ; spins++ {
		old = l.rate.Load()
		w0, w1 = l.load128()
		if w0>>verShift == old.ver {
			return old, w0, w1
		}
		backoff(spins)
	}
}

// SetRate changes the stable rate as Guava's setRate does: time elapsed so far
// is credited at the old rate, stored permits keep their proportion of
// maxPermits, and the next request still pays the previous request's cost at the
// old rate. permitsPerSecond must be > 0; +Inf is allowed.
func (l *Limiter) SetRate(permitsPerSecond float64) error {
	if err := checkRate(permitsPerSecond); err != nil {
		return err
	}
	now := l.micros(clock.Nanotime(l.clk))
	cfg := new(rateConfig)
	for {
		old, w0, w1 := l.settled()
		st := decode(w0, w1, old)
		l.setRate(&st, cfg, permitsPerSecond, now)
		cfg.ver = (old.ver + 1) & 0xff
		cfg.optStored, cfg.hasStored = old.optStored, old.hasStored
		// The CAS bumps the version: concurrent SetRates are ordered by it,
		// calls that read the old state fail their CAS, and calls that see
		// the new version before the store below wait for it (snapshot).
		if l.cas(w0, w1, encodeNext(st.next, cfg.ver), math.Float64bits(st.stored)) {
			l.rate.Store(cfg)
			return nil
		}
	}
}

// setRate is Guava's doSetRate on both levels: it resyncs st under its
// current rate, then fills cfg for the new rate and moves st to it.
func (l *Limiter) setRate(st *state, cfg *rateConfig, rate float64, now int64) {
	l.resync(st, now)
	old := st.maxP
	st.rateConfig = cfg
	st.stable = 1e6 / rate
	if l.warmup < 0 {
		st.maxP = 0 // a zero burst stays zero even at +Inf (0*Inf would be NaN)
		if l.param > 0 {
			st.maxP = l.param * rate
		}
		switch {
		case old == math.Inf(1): // stored would be NaN below
			st.stored = st.maxP
		case old == 0: // initial state: empty
			st.stored = 0
		default:
			st.stored = st.stored * st.maxP / old
		}
		return
	}
	if l.warmup == 0 {
		// No warm-up: nothing is ever stored. Guava divides 0 by 0 here and
		// can end up with NaN stored permits, which would wait for nothing.
		st.threshold, st.maxP, st.slope, st.stored = 0, 0, 0, 0
		return
	}
	w := float64(l.warmup)
	cold := st.stable * l.param
	st.threshold = 0.5 * w / st.stable
	st.maxP = st.threshold + 2.0*w/(st.stable+cold)
	st.slope = (cold - st.stable) / (st.maxP - st.threshold)
	switch {
	case old == math.Inf(1): // stored would be NaN below
		st.stored = 0
	case old == 0: // initial state: cold
		st.stored = st.maxP
	default:
		st.stored = st.stored * st.maxP / old
	}
}

// Rate reports the stable rate in permits per second.
func (l *Limiter) Rate() float64 { return 1e6 / l.rate.Load().stable }

// StableIntervalMicros reports the time one permit costs at the stable
// rate, in microseconds (Guava's stableIntervalMicros): 1e6 / Rate().
func (l *Limiter) StableIntervalMicros() float64 { return l.rate.Load().stable }

// MaxPermits reports the most permits the limiter can store.
func (l *Limiter) MaxPermits() float64 { return l.rate.Load().maxP }

// StoredPermitsAt reports the permits available at now (after Guava's resync), for
// "remaining" headers and snapshots. Does not change state.
func (l *Limiter) StoredPermitsAt(now int64) float64 {
	st := l.read()
	l.resync(&st, l.micros(now))
	return storedOrMax(&st)
}
