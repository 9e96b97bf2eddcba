package algo

import (
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// The shared behavioural suite: every algorithm runs through the same
// checks, on a clock.Fake, with limit 10 per second.

var algoEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type algoCase struct {
	algo Kind
	// burst is how many 1-permit calls a fresh limiter admits at one instant.
	burst int
	// impossible is the smallest request that can never pass: one more
	// permit than the limit per window (token_bucket: than the larger of
	// limit and burst).
	impossible int
	// rate is false for concurrency, which has no honest retryAfter.
	rate bool
}

func algoCases() []algoCase {
	return []algoCase{
		{TokenBucket, 11, 11, true}, // full bucket of 10, plus Guava's request that goes into debt
		{WarmUp, 1, 11, true},       // cold: the first goes, the next pays the cold interval
		{LeakyBucket, 1, 11, true},  // no burst at all
		{FixedWindow, 10, 11, true},
		{SlidingWindow, 10, 11, true},
		{SentinelWindow, 10, 11, true},
		{SentinelWarmUp, 3, 11, true},
		{SentinelHotspot, 10, 11, true}, // cold: threshold nextUp(1/(5*0.04+0.1)) = 3.33/s
		{SlidingLog, 10, 11, true},
		{Concurrency, 10, 11, false},
		{AdaptiveConcurrency, 10, 11, false}, // initialLimit 10 (see testSpec)
	}
}

func testSpec(a Kind) Spec {
	s := Spec{Kind: a, Limit: 10}
	if a == WarmUp || a == SentinelWarmUp {
		s.Warmup = time.Second
	}
	if a == AdaptiveConcurrency {
		s.Limit, s.Adaptive.InitialLimit = 0, 10 // it finds its own limit; starts at 10
	}
	return withDefaults(s)
}

// withDefaults fills what s leaves zero as the engine's Rule.WithDefaults
// does.
func withDefaults(s Spec) Spec {
	if s.Window == 0 && s.Kind != AdaptiveConcurrency {
		s.Window = time.Second
	}
	switch s.Kind {
	case TokenBucket:
		if s.Burst == 0 {
			s.Burst = s.Limit
		}
	case WarmUp, SentinelWarmUp:
		if s.ColdFactor == 0 {
			s.ColdFactor = 3
		}
	case SlidingWindow:
		if s.Buckets == 0 {
			s.Buckets = 10
		}
	case CircuitBreaker:
		if s.Breaker.MinRequests == 0 {
			s.Breaker.MinRequests = 5
		}
		if s.Breaker.Probes == 0 {
			s.Breaker.Probes = 1
		}
	case AdaptiveConcurrency:
		a := &s.Adaptive
		if a.InitialLimit == 0 {
			a.InitialLimit = 20
		}
		if a.MinLimit == 0 {
			a.MinLimit = 1
		}
		if a.MaxLimit == 0 {
			a.MaxLimit = max(1000, a.InitialLimit)
		}
		if a.Tolerance == 0 {
			a.Tolerance = 1.5
		}
		if a.Smoothing == 0 {
			a.Smoothing = 0.2
		}
	}
	return s
}

// newTestLimiter builds the limiter of r at limit on a fresh Fake clock,
// 250ms into it, away from any window boundary.
func newTestLimiter(t testing.TB, r Spec, limit float64) (Limiter, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(algoEpoch)
	clk.Advance(250 * time.Millisecond)
	l, err := New(r, limit, clk, clk.Nanotime())
	if err != nil {
		t.Fatalf("New(%v): %v", r.Kind, err)
	}
	return l, clk
}

// drain takes 1-permit calls at now until one is refused, and returns how
// many passed and the refusal.
func drain(t *testing.T, l Limiter, now int64) (int, Decision) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if d := l.TryAcquire(now, 1, 0); !d.OK() {
			return i, d
		} else if d.Wait != 0 {
			t.Fatalf("call %d: waited %v with maxWait 0", i, d.Wait)
		}
	}
	t.Fatal("1000 calls passed at one instant")
	return 0, Decision{}
}

func TestAlgorithmsAdmitUpToLimitThenRefuseHonestly(t *testing.T) {
	for _, c := range algoCases() {
		t.Run(c.algo.String(), func(t *testing.T) {
			l, clk := newTestLimiter(t, testSpec(c.algo), 10)
			now := clk.Nanotime()
			got, d := drain(t, l, now)
			if got != c.burst {
				t.Fatalf("admitted %d at once, want %d", got, c.burst)
			}
			if d.Verdict == Never {
				t.Fatalf("a 1-permit call refused as never: %+v", d)
			}
			if !c.rate {
				if d.Wait != 0 {
					t.Fatalf("retryAfter %v, want 0 (unknown)", d.Wait)
				}
				return
			}
			if d.Wait <= 0 {
				t.Fatalf("retryAfter %v, want > 0", d.Wait)
			}
			// Honest: still refused a microsecond earlier, admitted on time.
			if e := l.TryAcquire(now+int64(d.Wait-time.Microsecond), 1, 0); e.OK() {
				t.Fatalf("admitted 1µs before retryAfter %v", d.Wait)
			}
			if e := l.TryAcquire(now+int64(d.Wait), 1, 0); !e.OK() {
				t.Fatalf("refused at retryAfter %v: %+v", d.Wait, e)
			}
		})
	}
}

func TestAlgorithmsRecoverAfterIdle(t *testing.T) {
	for _, c := range algoCases() {
		t.Run(c.algo.String(), func(t *testing.T) {
			r := testSpec(c.algo)
			l, clk := newTestLimiter(t, r, 10)
			drain(t, l, clk.Nanotime())
			if !c.rate { // concurrency, adaptive_concurrency
				testRelease(l, c.burst)
			}
			clk.Advance(2*r.Window + r.Warmup)
			if got, _ := drain(t, l, clk.Nanotime()); got != c.burst {
				t.Fatalf("after idling, admitted %d at once, want %d as when fresh", got, c.burst)
			}
		})
	}
}

func TestAlgorithmsRefundRestores(t *testing.T) {
	for _, c := range algoCases() {
		t.Run(c.algo.String(), func(t *testing.T) {
			l, clk := newTestLimiter(t, testSpec(c.algo), 10)
			now := clk.Nanotime()
			for i := 0; i < 3; i++ { // several take/refund rounds must not leak permits either way
				d := l.TryAcquire(now, 1, 0)
				if !d.OK() {
					t.Fatalf("round %d: refused: %+v", i, d)
				}
				l.Refund(now, 1)
			}
			if got, _ := drain(t, l, now); got != c.burst {
				t.Fatalf("after refunds, admitted %d at once, want %d as when fresh", got, c.burst)
			}
		})
	}
}

func TestAlgorithmsNeverForImpossibleRequests(t *testing.T) {
	for _, c := range algoCases() {
		t.Run(c.algo.String(), func(t *testing.T) {
			l, clk := newTestLimiter(t, testSpec(c.algo), 10)
			now := clk.Nanotime()
			for _, n := range []int{c.impossible, math.MaxInt32, math.MaxInt} {
				for _, wait := range []time.Duration{0, time.Hour} {
					if !c.rate && wait > 0 {
						continue // concurrency caps never queue
					}
					if d := l.TryAcquire(now, n, wait); d.OK() || d.Verdict != Never {
						t.Fatalf("TryAcquire(%d, maxWait %v) = %+v, want never", n, wait, d)
					}
				}
			}
			if c.algo == SentinelWarmUp {
				return // cold: the whole limit passes only once warm (TestSentinelWarmUp...)
			}
			if d := l.TryAcquire(now, c.impossible-1, 0); !d.OK() {
				t.Fatalf("TryAcquire(%d), the whole limit, refused: %+v", c.impossible-1, d)
			}
		})
	}
}

// throughput drives 1-permit calls every Window/80 for 10 windows and
// counts the admitted ones.
func throughput(t *testing.T, c algoCase, limit float64) int {
	t.Helper()
	r := testSpec(c.algo)
	l, clk := newTestLimiter(t, r, 10)
	l.SetLimit(clk.Nanotime(), limit)
	n := 0
	step := r.Window / 80
	for i := 0; i < 800; i++ {
		if d := l.TryAcquire(clk.Nanotime(), 1, 0); d.OK() {
			n++
			if !c.rate { // concurrency, adaptive_concurrency
				testRelease(l, 1) // calls finish at once: never more than one in flight
			}
		}
		clk.Advance(step)
	}
	return n
}

func TestAlgorithmsSetLimitScalesAdmission(t *testing.T) {
	for _, c := range algoCases() {
		if !c.rate { // concurrency, adaptive_concurrency
			continue // see TestConcurrencySetLimit; adaptive_concurrency owns its limit
		}
		t.Run(c.algo.String(), func(t *testing.T) {
			base := throughput(t, c, 10)
			t.Logf("limit 10: %d admitted over 10 windows", base)
			for _, f := range []float64{0.5, 2} {
				got := throughput(t, c, 10*f)
				if ratio := float64(got) / float64(base); math.Abs(ratio-f) > 0.15*f {
					t.Errorf("SetLimit(%v): admitted %d over 10 windows, %d at limit 10: ratio %.2f, want %.2f±15%%",
						10*f, got, base, ratio, f)
				}
			}
		})
	}
}

func TestAlgorithmsConcurrentExactAtOneInstant(t *testing.T) {
	for _, c := range algoCases() {
		t.Run(c.algo.String(), func(t *testing.T) {
			l, clk := newTestLimiter(t, testSpec(c.algo), 10)
			now := clk.Nanotime()
			const workers, tries = 16, 50
			var wg sync.WaitGroup
			admitted := make([]int, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range tries {
						if l.TryAcquire(now, 1, 0).OK() {
							admitted[w]++
						}
						_ = testRemaining(l, now)
					}
				}()
			}
			wg.Wait()
			total := 0
			for _, a := range admitted {
				total += a
			}
			if total != c.burst {
				t.Fatalf("16 goroutines admitted %d at one instant, want exactly %d", total, c.burst)
			}
		})
	}
}

// TestAlgorithmsConcurrentMixed runs every method from 16 goroutines while
// the clock moves, for the race detector, and checks nothing is left in a
// state that refuses a fresh start.
func TestAlgorithmsConcurrentMixed(t *testing.T) {
	for _, c := range algoCases() {
		t.Run(c.algo.String(), func(t *testing.T) {
			r := testSpec(c.algo)
			l, clk := newTestLimiter(t, r, 10)
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 200 {
						now := clk.Nanotime()
						d := l.TryAcquire(now, 1+i%2, time.Duration(w%3)*50*time.Millisecond)
						if d.OK() {
							if i%5 == 0 {
								l.Refund(now+int64(d.Wait), 1+i%2)
							} else {
								testRelease(l, 1+i%2)
							}
						}
						if w == 0 {
							clk.Advance(3 * time.Millisecond)
						}
						if w == 1 && i%50 == 0 {
							l.SetLimit(now, float64(5+i%20))
						}
						if rem := testRemaining(l, now); rem < 0 || math.IsNaN(rem) {
							t.Errorf("remaining %v", rem)
						}
					}
				}()
			}
			wg.Wait()
			l.SetLimit(clk.Nanotime(), 10)
			clk.Advance(3*r.Window + r.Warmup)
			if got, _ := drain(t, l, clk.Nanotime()); got != c.burst {
				t.Fatalf("after the storm and an idle spell, admitted %d at once, want %d", got, c.burst)
			}
		})
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	clk := clock.NewFake(algoEpoch)
	for _, tc := range []struct {
		name  string
		r     Spec
		limit float64
	}{
		{"zero limit", testSpec(FixedWindow), 0},
		{"NaN limit", testSpec(LeakyBucket), math.NaN()},
		{"inf limit", testSpec(SlidingLog), math.Inf(1)},
		{"huge log", Spec{Kind: SlidingLog, Limit: MaxSlidingLogLimit + 1, Window: time.Second}, MaxSlidingLogLimit + 1},
		{"zero window", Spec{Kind: FixedWindow, Limit: 1}, 1},
		{"no buckets", Spec{Kind: SlidingWindow, Limit: 1, Window: time.Second}, 1},
		{"unknown", Spec{Kind: numKinds, Limit: 1, Window: time.Second}, 1},
	} {
		if l, err := New(tc.r, tc.limit, clk, 0); err == nil {
			t.Errorf("%s: New = %T, want an error", tc.name, l)
		}
	}
}

// testRelease ends n in-flight permits as Exit does: only the concurrency
// caps (holders) hold permits past Entry.
func testRelease(l Limiter, n int) {
	if h, ok := l.(Holder); ok {
		h.Release(n)
	}
}

// testRemaining is the permits l reports left at now: every algorithm is
// a Remainer.
func testRemaining(l Limiter, now int64) float64 {
	return l.(Remainer).Remaining(now)
}

// TestDecisionFitsRegisters keeps Decision within what the compiler passes
// in registers (at most four fields, at most four words): one field more
// and every TryAcquire returns it through memory again.
func TestDecisionFitsRegisters(t *testing.T) {
	typ := reflect.TypeFor[Decision]()
	if n, size := typ.NumField(), typ.Size(); n > 4 || size > 32 {
		t.Fatalf("Decision has %d fields, %d bytes; want at most 4 and 32", n, size)
	}
}
