package flow

import (
	"context"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/flowgate/flowgate/internal/hotpath"
)

// Permit is a call admitted by Entry. Call Exit exactly when the call ends.
//
// Permits are pooled so the pass path allocates nothing. What idempotent
// Exit guarantees: the first Exit wins (a compare-and-swap on the permit's
// state, so even two racing Exits count once); every later Exit before the
// Permit is handed out again is a no-op, as is Exit on a nil Permit. After
// Exit the Permit goes back to the pool and a later Entry may hand it out,
// so a stale pointer's Exit would end that other call: do not keep or use
// a Permit after Exit. The usual
// `p, err := eng.Entry(r); if err != nil {...}; defer p.Exit()` is safe.
// Calls to a resource with no rule (system guard off) share one static
// Permit whose Exit does nothing.
type Permit struct {
	state atomic.Uint32
	// lane is where this permit's calls count passes and completions (see
	// laneBucket): fixed when the permit is made, from a sequence, so the
	// permits the pool keeps for different Ps get different lanes.
	lane   uint32
	eng    *Engine
	stats  *resourceStats
	bucket *laneBucket // where Entry counted the pass, in stats: an unmeasured Exit counts there
	// stats and bucket stay past Exit, so that the next Entry on this
	// permit for the same resource finds its bucket at once (see
	// resourceStats.passIn); Entry sets stats on every path.
	rng    uint64 // this permit's random stream for RT sampling (see sample)
	start  int64
	tokens int
	waited time.Duration
	quota  quotaNote
	// sysCounted: counted in Engine.sysInFlight; unruled: in Engine.unruled.
	// extra: any of these, or held, grants or brk, is set (Exit has more to
	// do than count the call; the one-rule path never sets it).
	sysCounted, unruled, extra bool
	held                       []holder       // concurrency caps to release
	spill                      []takenLim     // lent to an Entry with many rules (see entryState.take)
	grants                     []clusterGrant // token server grants to release
	brk                        []breakerUse   // circuit breakers to tell the outcome
	// The size a multiple of hotpath.CacheLine, so the allocator's size
	// class lays permits on whole lines: two permits sharing a line (those
	// of two Ps, made one after the other) had every Entry and Exit on one
	// core invalidate the other's. TestPermitSize holds it.
	_ [56]byte
}

const (
	permitFree   = iota // in the pool or exited
	permitActive        // handed out by Entry
	permitStatic        // the shared permit of a resource with no rule
)

// noopPermit is returned for resources with no rule: Exit does nothing.
var noopPermit = newStaticPermit()

func newStaticPermit() *Permit {
	p := new(Permit)
	p.state.Store(permitStatic)
	return p
}

// pooledPermit is a permit from the pool, or a new one.
func (e *Engine) pooledPermit() *Permit {
	if p, _ := e.permits.Get().(*Permit); p != nil {
		return p
	}
	return &Permit{eng: e, rng: rand.Uint64(), lane: e.permitSeq.Add(1)}
}

// getPermit hands out a permit: the calling P's spare (see Engine.spare),
// else one from the pool.
func (e *Engine) getPermit(start int64) *Permit {
	p := (*Permit)(e.spare.Get())
	if p == nil {
		p = e.pooledPermit()
	}
	p.start = start
	// Between the pool's Get and Entry's return the permit is ours alone,
	// and whoever calls Exit later got it from us through something that
	// orders memory (the pool's Put and Get do too). A stale pointer's Exit
	// racing this is the misuse Permit's doc forbids.
	hotpath.StoreUnpublished32(&p.state, permitActive)
	return p
}

// Exit ends the call: it releases concurrency permits, records completion,
// response time (since Entry returned; on a sample of calls with the real
// clock, see WithRTSampling) and, with WithError(err) and a non-nil err, a
// failure. See Permit for what idempotent means here.
func (p *Permit) Exit(opts ...ExitOption) {
	// Never a CAS on the shared no-rule permit: its cache line stays
	// clean across cores.
	if p == nil || p == noopPermit || !p.state.CompareAndSwap(permitActive, permitFree) {
		return
	}
	var failed bool
	for i := range opts {
		failed = failed || opts[i].err != nil
	}
	e := p.eng
	// Response time is measured on a random 1 in rtMask+1 of Exits, each
	// standing for rtMask+1 calls: the clock read is most of an Exit's
	// cost. See WithRTSampling. Adaptive limits learn from the same sample.
	measured := p.stats != nil && (e.cf.rtMask == 0 || p.sample()&e.cf.rtMask == 0)
	var now int64
	if measured {
		now = e.now()
	}
	if p.extra {
		p.exitExtra(failed, measured, now)
	}
	if p.stats != nil {
		if measured {
			p.stats.exit(now, now-p.start, uint64(e.cf.rtMask)+1, failed, p.lane)
		} else {
			p.stats.exitUnmeasured(p.bucket, failed)
		}
	}
	// Entry sets the fields on every path; stats and bucket stay (see
	// Permit.stats). putPermit, written out: it does not inline.
	if !e.spare.Put(unsafe.Pointer(p)) {
		e.permits.Put(p)
	}
}

// ungetPermit gives back a permit from getPermit that no call was given.
func (e *Engine) ungetPermit(p *Permit) {
	hotpath.StoreUnpublished32(&p.state, permitFree)
	e.putPermit(p)
}

// putPermit gives p back: to the calling P's spare, else to the pool.
func (e *Engine) putPermit(p *Permit) {
	if !e.spare.Put(unsafe.Pointer(p)) {
		e.permits.Put(p)
	}
}

// exitExtra is Exit's work beyond counting the call (see Permit.extra):
// the breakers told the outcome, what was held released, and the system
// guard's counts.
func (p *Permit) exitExtra(failed, measured bool, now int64) {
	if len(p.brk) > 0 {
		p.exitBreakers(failed)
	}
	p.release(measured, now)
	e := p.eng
	if p.sysCounted {
		e.sysInFlight.Add(-1)
	}
	if p.unruled {
		e.unruled.Add(-1)
	}
	p.sysCounted, p.unruled, p.extra = false, false, false
}

// release lets go of what the call held past Entry: concurrency permits
// (telling adaptive limits the response time when measured) and token
// server grants.
func (p *Permit) release(measured bool, now int64) {
	e := p.eng
	for i, l := range p.held {
		l.release(p.tokens)
		if measured {
			if o, ok := l.(rttObserver); ok {
				o.observe(now, now-p.start)
			}
		}
		p.held[i] = nil
	}
	for i := range p.grants {
		g := &p.grants[i]
		// Not a refund: the call ran, its rate tokens stay spent.
		g.req.Refund = false
		if err := e.cf.ts.Release(context.Background(), g.req, g.res); err != nil {
			e.logError("flow: token server release", err, nil)
		}
		*g = clusterGrant{}
	}
	p.held, p.grants = p.held[:0], p.grants[:0]
}

// sample draws from the permit's own random stream (wyrand: a Weyl
// sequence through a 128-bit multiply-fold), seeded from math/rand/v2 when
// the permit is made. Only the goroutine that won Exit's compare-and-swap
// calls it, so the state is plain; it costs about a nanosecond where
// rand.Uint32 costs five. Which calls are measured depends only on this
// stream, never on the call, so the sampled figures stay unbiased.
func (p *Permit) sample() uint32 {
	p.rng += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(p.rng, p.rng^0xe7037ed1a0b428db)
	return uint32((hi ^ lo) >> 32)
}

// Quota reports the most restrictive rule that admitted the call (the one
// with the fewest permits left), for rate-limit headers; false when no rule
// applied.
func (p *Permit) Quota() (Quota, bool) {
	if p == nil {
		return Quota{}, false
	}
	q := &p.quota
	if q.cr == nil {
		return Quota{}, false
	}
	return Quota{RuleID: q.cr.rule.ID, Limit: q.limit, Window: q.cr.rule.Window, Remaining: q.remaining, Reset: q.reset}, true
}

// Waited reports how long Entry queued for a MaxWait slot.
func (p *Permit) Waited() time.Duration {
	if p == nil {
		return 0
	}
	return p.waited
}

// Quota describes the rule that most restricted a call, for headers.
type Quota struct {
	RuleID    string        // the rule's ID ("" when it has none)
	Limit     float64       // permits per Window, after the adaptive factor
	Window    time.Duration // for concurrency rules, Limit is in flight
	Remaining float64       // permits left at that rule just after this call
	Reset     time.Duration // time until the quota is fully restored or the window resets
}

// Guard runs fn under a permit for resource: it returns the *BlockError
// when the call is refused (fn does not run), and otherwise fn's error,
// recording it and fn's latency at Exit. A panicking fn still exits the
// permit (recorded as a failure) and the panic goes on. ctx bounds any
// MaxWait wait and is passed to fn; a WithContext option overrides it for
// the wait only. With WithFallback, a refused call runs the fallback
// instead and Guard returns its error.
func (e *Engine) Guard(ctx context.Context, resource string, fn func(context.Context) error, opts ...EntryOption) error {
	p, err := e.entry(ctx, resource, opts)
	if err != nil {
		return fallback(ctx, err, opts)
	}
	done := false
	defer func() {
		if !done { // fn panicked or called runtime.Goexit
			p.Exit(WithError(errPanicked))
		}
	}()
	err = fn(ctx)
	done = true
	p.Exit(WithError(err))
	return err
}

// fallback runs the last WithFallback of opts for a refusal (Entry's
// errors are all *BlockError), or returns err.
func fallback(ctx context.Context, err error, opts []EntryOption) error {
	be, ok := err.(*BlockError)
	for i := len(opts) - 1; i >= 0 && ok; i-- {
		if o := &opts[i]; o.kind == optFallback && o.fb != nil {
			return o.fb(ctx, be)
		}
	}
	return err
}

var errPanicked = errorString("flow: guarded function panicked")

type errorString string

func (s errorString) Error() string { return string(s) }
