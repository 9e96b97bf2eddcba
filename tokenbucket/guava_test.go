package tokenbucket

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// These tests replay the event sequences of Guava's RateLimiterTest. "R0.20"
// is a wait of 0.2 s imposed by the limiter, "U1.00" a second the test itself
// let pass; waits print as Guava's %3.2f does (half-up).

func TestGuavaSimple(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(5)
	s.acquire(l, 1)
	s.acquire(l, 1)
	s.acquire(l, 1)
	s.assertEvents("R0.00", "R0.20", "R0.20")
}

func TestGuavaSimpleWithWait(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(5)
	s.acquire(l, 1)
	s.sleepMillis(200)
	s.acquire(l, 1)
	s.acquire(l, 1)
	s.assertEvents("R0.00", "U0.20", "R0.00", "R0.20")
}

func TestGuavaOneSecondBurst(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(5)
	s.sleepMillis(1000)
	s.sleepMillis(1000)
	s.acquire(l, 1)
	s.acquire(l, 1)
	s.acquire(l, 3)
	s.acquire(l, 1)
	s.acquire(l, 1)
	s.assertEvents("U1.00", "U1.00", "R0.00", "R0.00", "R0.00", "R0.00", "R0.20")
}

func TestGuavaWarmUp(t *testing.T) {
	s := newStopwatch(t)
	l := s.warming(2, 4000*time.Millisecond, 3)
	ramp := "R0.00, R1.38, R1.13, R0.88, R0.63, R0.50, R0.50, R0.50"
	s.acquireN(l, 8)
	s.sleepMillis(500)
	s.sleepMillis(4000)
	s.acquireN(l, 8)
	s.sleepMillis(500)
	s.sleepMillis(2000)
	s.acquireN(l, 8)
	s.assertEvents(ramp, "U0.50", "U4.00", ramp, "U0.50", "U2.00",
		"R0.00, R0.50, R0.50, R0.50, R0.50, R0.50, R0.50, R0.50")
}

func TestGuavaWarmUpWithColdFactor(t *testing.T) {
	s := newStopwatch(t)
	l := s.warming(5, 4000*time.Millisecond, 10)
	ramp := "R0.00, R1.75, R1.26, R0.76, R0.30, R0.20, R0.20, R0.20"
	s.acquireN(l, 8)
	s.sleepMillis(200)
	s.sleepMillis(4000)
	s.acquireN(l, 8)
	s.sleepMillis(200)
	s.sleepMillis(1000)
	s.acquireN(l, 8)
	s.assertEvents(ramp, "U0.20", "U4.00", ramp, "U0.20", "U1.00",
		"R0.00, R0.20, R0.20, R0.20, R0.20, R0.20, R0.20, R0.20")
}

func TestGuavaWarmUpWithColdFactor1(t *testing.T) {
	s := newStopwatch(t)
	l := s.warming(5, 4000*time.Millisecond, 1)
	flat := "R0.00, R0.20, R0.20, R0.20, R0.20, R0.20, R0.20, R0.20"
	s.acquireN(l, 8)
	s.sleepMillis(340)
	s.acquireN(l, 8)
	s.assertEvents(flat, "U0.34", flat)
}

func TestGuavaWarmUpAndUpdate(t *testing.T) {
	s := newStopwatch(t)
	l := s.warming(2, 4000*time.Millisecond, 3)
	s.acquireN(l, 8)
	s.sleepMillis(4500)
	s.acquireN(l, 3)
	if err := l.SetRate(4); err != nil {
		t.Fatal(err)
	}
	s.acquire(l, 1) // repays the previous request at the old rate
	s.acquireN(l, 4)
	s.sleepMillis(4250)
	s.acquireN(l, 11)
	s.assertEvents(
		"R0.00, R1.38, R1.13, R0.88, R0.63, R0.50, R0.50, R0.50",
		"U4.50",
		"R0.00, R1.38, R1.13",
		"R0.88",
		"R0.34, R0.28, R0.25, R0.25",
		"U4.25",
		"R0.00, R0.72, R0.66, R0.59, R0.53, R0.47, R0.41",
		"R0.34, R0.28, R0.25, R0.25")
}

func TestGuavaWarmUpAndUpdateWithColdFactor(t *testing.T) {
	s := newStopwatch(t)
	l := s.warming(5, 4000*time.Millisecond, 10)
	s.acquireN(l, 8)
	s.sleepMillis(4200)
	s.acquireN(l, 3)
	if err := l.SetRate(10); err != nil {
		t.Fatal(err)
	}
	s.acquire(l, 1)
	s.acquireN(l, 4)
	s.sleepMillis(4100)
	s.acquireN(l, 11)
	s.assertEvents(
		"R0.00, R1.75, R1.26, R0.76, R0.30, R0.20, R0.20, R0.20",
		"U4.20",
		"R0.00, R1.75, R1.26",
		"R0.76",
		"R0.20, R0.10, R0.10, R0.10",
		"U4.10",
		"R0.00, R0.94, R0.81, R0.69, R0.57, R0.44, R0.32",
		"R0.20, R0.10, R0.10, R0.10")
}

func TestGuavaBurstyAndUpdate(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(1)
	s.acquire(l, 1)
	s.acquire(l, 1)
	if err := l.SetRate(2); err != nil {
		t.Fatal(err)
	}
	s.acquire(l, 1) // the previous request was under the old rate
	s.acquire(l, 2)
	s.acquire(l, 4)
	s.acquire(l, 1)
	s.assertEvents("R0.00", "R1.00", "R1.00", "R0.50", "R1.00", "R2.00")
}

func TestGuavaSimpleWeights(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(1)
	for _, n := range []int{1, 1, 2, 4, 8, 1} {
		s.acquire(l, n)
	}
	s.assertEvents("R0.00", "R1.00", "R1.00", "R2.00", "R4.00", "R8.00")
}

func TestGuavaTryAcquireNoWaitAllowed(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(5)
	s.wantTry(l, 1, 0, true)
	s.wantTry(l, 1, 0, false)
	s.wantTry(l, 1, 0, false)
	s.sleepMillis(100)
	s.wantTry(l, 1, 0, false)
}

func TestGuavaTryAcquireSomeWaitAllowed(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(5)
	s.wantTry(l, 1, 0, true)
	s.wantTry(l, 1, 200*time.Millisecond, true)
	s.wantTry(l, 1, 100*time.Millisecond, false)
	s.sleepMillis(100)
	s.wantTry(l, 1, 100*time.Millisecond, true)
}

func TestGuavaTryAcquireOverflow(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(5)
	s.wantTry(l, 1, 0, true)
	s.sleepMillis(100)
	s.wantTry(l, 1, math.MaxInt64, true)
}

func TestGuavaTryAcquireNegative(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(5)
	s.wantTry(l, 5, 0, true)
	s.sleepMillis(900)
	s.wantTry(l, 1, math.MinInt64, false)
	s.sleepMillis(100)
	s.wantTry(l, 1, -time.Second, true)
}

func TestGuavaDoubleMinValueCanAcquireExactlyOnce(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(math.SmallestNonzeroFloat64)
	s.wantTry(l, 1, 0, true)
	s.wantTry(l, 1, 0, false)
	s.sleepMillis(math.MaxInt32)
	s.wantTry(l, 1, 0, false)
}

func TestGuavaInfinityBursty(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(math.Inf(1))
	s.acquire(l, math.MaxInt32/4)
	s.acquire(l, math.MaxInt32/2)
	s.acquire(l, math.MaxInt32)
	s.assertEvents("R0.00", "R0.00", "R0.00")

	if err := l.SetRate(2); err != nil {
		t.Fatal(err)
	}
	s.acquireN(l, 5)
	// The saved-up 1-second burst (2), the free request, then 0.5 s each.
	s.assertEvents("R0.00", "R0.00", "R0.00", "R0.50", "R0.50")

	if err := l.SetRate(math.Inf(1)); err != nil {
		t.Fatal(err)
	}
	s.acquireN(l, 3)
	s.assertEvents("R0.50", "R0.00", "R0.00") // repay the last 0.5 s, then free
}

func TestGuavaInfinityBurstyTimeElapsed(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(math.Inf(1))
	s.clk.Advance(time.Millisecond)
	if err := l.SetRate(2); err != nil {
		t.Fatal(err)
	}
	s.acquireN(l, 5)
	s.assertEvents("R0.00", "R0.00", "R0.00", "R0.50", "R0.50")
}

func TestGuavaInfinityWarmUp(t *testing.T) {
	s := newStopwatch(t)
	l := s.warming(math.Inf(1), 10*time.Second, 3)
	s.acquire(l, math.MaxInt32/4)
	s.acquire(l, math.MaxInt32/2)
	s.acquire(l, math.MaxInt32)
	s.assertEvents("R0.00", "R0.00", "R0.00")

	if err := l.SetRate(1); err != nil {
		t.Fatal(err)
	}
	s.acquireN(l, 3)
	s.assertEvents("R0.00", "R1.00", "R1.00")

	if err := l.SetRate(math.Inf(1)); err != nil {
		t.Fatal(err)
	}
	s.acquireN(l, 3)
	s.assertEvents("R1.00", "R0.00", "R0.00")
}

func TestGuavaInfinityWarmUpTimeElapsed(t *testing.T) {
	s := newStopwatch(t)
	l := s.warming(math.Inf(1), 10*time.Second, 3)
	s.clk.Advance(time.Millisecond)
	if err := l.SetRate(1); err != nil {
		t.Fatal(err)
	}
	s.acquireN(l, 5)
	s.assertEvents("R0.00", "R1.00", "R1.00", "R1.00", "R1.00")
}

func TestGuavaWeNeverGetABurstMoreThanOneSec(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(1)
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, rate := range []int{1000, 1, 10, 1000000, 10, 1} {
		s.clk.Advance(time.Duration(rate) * time.Second)
		if err := l.SetRate(float64(rate)); err != nil {
			t.Fatal(err)
		}
		// One second of work may go in a burst (take under a second)...
		if burst := s.measureTotalTime(l, rate, rnd).Truncate(time.Millisecond); burst > time.Second {
			t.Fatalf("rate %d: burst took %v, want <= 1s", rate, burst)
		}
		// ...but work beyond that takes at least a second.
		if after := s.measureTotalTime(l, rate, rnd).Truncate(time.Millisecond); after < time.Second {
			t.Fatalf("rate %d: work after the burst took %v, want >= 1s", rate, after)
		}
	}
}

func TestGuavaTimeToWarmUpIsHonouredEvenWithWeights(t *testing.T) {
	s := newStopwatch(t)
	rnd := rand.New(rand.NewPCG(3, 4))
	const warmupPermits = 10
	for trial := 0; trial < 100; trial++ {
		for _, coldFactor := range []float64{2, 3, 10} {
			for _, qps := range []float64{4, 2, 1, 0.5, 0.1} {
				// With warmupPermits = maxPermits - thresholdPermits, the warm-up
				// period is (1 + coldFactor) * warmupPermits * stableInterval / 2.
				warmupMillis := javaLong((1 + coldFactor) * warmupPermits / (2.0 * qps) * 1000.0)
				l := s.warming(qps, time.Duration(warmupMillis)*time.Millisecond, coldFactor)
				got := s.measureTotalTime(l, warmupPermits, rnd) / time.Millisecond
				if int64(got) != warmupMillis {
					t.Fatalf("coldFactor %v qps %v: took %dms, want %dms", coldFactor, qps, got, warmupMillis)
				}
			}
		}
	}
}
