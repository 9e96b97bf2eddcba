package algo

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
	"time"
)

// ThrottleSpec is a client_throttle's settings.
type ThrottleSpec struct {
	// K is how many requests per accepted one the client may send before
	// it starts refusing locally (Google SRE's K; 2 in the book).
	K float64
	// Seed seeds the throttle's random draws; 0: a random seed. Tests set
	// it so that a run's refusals are repeatable.
	Seed uint64
}

// throttleBuckets is the number of sub-windows a client_throttle slides
// its counts by: the window moves on in steps of Window/throttleBuckets.
const throttleBuckets = 20

// Throttle is Google SRE client-side adaptive throttling ("Handling
// Overload", Site Reliability Engineering, ch. 21): over a sliding window
// it counts the requests the client attempted and those the backend
// accepted, and refuses a new request locally with probability
//
//	max(0, (requests − K·accepts) / (requests + 1))
//
// A refused request counts as attempted, so that the refusal rate keeps
// up with a backend that refuses everything. Accepts come from Record,
// which the engine calls at Exit with the backend's answer.
//
// A mutex guards the counts: a throttle guards outgoing network calls,
// whose cost dwarfs an uncontended lock, and the draw and the counts must
// move together.
type Throttle struct {
	mu     sync.Mutex
	k      float64
	step   int64 // ns per bucket
	head   int64 // index (now/step) of the newest bucket
	req    [throttleBuckets]float64
	acc    [throttleBuckets]float64
	rng    uint64
	totReq float64
	totAcc float64
}

func newThrottle(window time.Duration, s ThrottleSpec, now int64) *Throttle {
	step := max(int64(window)/throttleBuckets, 1)
	seed := s.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	k := s.K
	if !(k > 0) {
		k = 2
	}
	return &Throttle{k: k, step: step, head: floorDiv(now, step), rng: seed}
}

// RejectProbability is the SRE formula: the chance a new request is
// refused locally after requests attempted and accepts accepted.
func RejectProbability(requests, accepts, k float64) float64 {
	return math.Max(0, (requests-k*accepts)/(requests+1))
}

// advance drops the buckets that left the window at now. t.mu is held.
func (t *Throttle) advance(now int64) {
	idx := floorDiv(now, t.step)
	if idx <= t.head {
		return
	}
	n := min(idx-t.head, throttleBuckets)
	for i := int64(1); i <= n; i++ {
		b := floorMod(t.head+i, throttleBuckets)
		t.totReq -= t.req[b]
		t.totAcc -= t.acc[b]
		t.req[b], t.acc[b] = 0, 0
	}
	if n == throttleBuckets { // keep float sums from drifting
		t.totReq, t.totAcc = 0, 0
	}
	t.head = idx
}

// draw is a uniform number in [0, 1) from the throttle's own wyrand
// stream. t.mu is held.
func (t *Throttle) draw() float64 {
	t.rng += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(t.rng, t.rng^0xe7037ed1a0b428db)
	return float64((hi^lo)>>11) / (1 << 53)
}

// TryAcquire counts n attempted requests at now and refuses them with the
// SRE probability. maxWait is ignored: a throttle never queues.
func (t *Throttle) TryAcquire(now int64, n int, _ time.Duration) Decision {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advance(now)
	p := RejectProbability(t.totReq, t.totAcc, t.k)
	b := floorMod(t.head, throttleBuckets)
	t.req[b] += float64(n)
	t.totReq += float64(n)
	if p > 0 && t.draw() < p {
		return Decision{Verdict: Refused, Wait: time.Duration(t.step), Remaining: 0}
	}
	return Decision{Verdict: Granted, Remaining: 1 - p}
}

// Refund takes back n requests counted at at whose call did not go out
// (a later check refused it).
func (t *Throttle) Refund(at int64, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advance(at)
	idx := floorDiv(at, t.step)
	if idx <= t.head-throttleBuckets { // already out of the window
		return
	}
	b := floorMod(idx, throttleBuckets)
	d := math.Min(float64(n), t.req[b])
	t.req[b] -= d
	t.totReq -= d
}

// Record counts the backend's answer to a request sent at at: accepted
// unless it refused the request for overload.
func (t *Throttle) Record(at int64, accepted bool) {
	if !accepted {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advance(at)
	idx := floorDiv(at, t.step)
	if idx <= t.head-throttleBuckets {
		return
	}
	b := floorMod(idx, throttleBuckets)
	t.acc[b]++
	t.totAcc++
}

// Counts reports the window's requests and accepts at now.
func (t *Throttle) Counts(now int64) (requests, accepts float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.advance(now)
	return t.totReq, t.totAcc
}

// Remaining reports 1 minus the refusal probability at now.
func (t *Throttle) Remaining(now int64) float64 {
	r, a := t.Counts(now)
	return 1 - RejectProbability(r, a, t.k)
}

// Reseed restarts the throttle's random draws from seed (tests).
func (t *Throttle) Reseed(seed uint64) {
	t.mu.Lock()
	t.rng = seed
	t.mu.Unlock()
}

// SetLimit does nothing: a throttle has no limit.
func (t *Throttle) SetLimit(int64, float64) {}
