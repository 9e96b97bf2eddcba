package tokenbucket

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// ratBursty is SmoothBursty as Guava writes it (nextFree and stored
// permits, changed together; no concurrency) in exact arithmetic: Guava's
// formulas without the float rounding of its stored permits, which is
// what its own tests' expected values are worked out in.
type ratBursty struct {
	next                    int64 // nextFreeTicketMicros
	stored, stable, maxP, b *big.Rat
}

func rat(f float64) *big.Rat { return new(big.Rat).SetFloat64(f) }

func (g *ratBursty) setRate(rate float64, now int64) {
	g.resync(now)
	r := rat(rate)
	old := g.maxP
	g.stable = new(big.Rat).Quo(rat(1e6), r)
	g.maxP = new(big.Rat).Mul(g.b, r)
	if old.Sign() == 0 {
		g.stored = new(big.Rat)
	} else {
		g.stored = new(big.Rat).Quo(new(big.Rat).Mul(g.stored, g.maxP), old)
	}
}

func (g *ratBursty) resync(now int64) {
	if now > g.next {
		idle := new(big.Rat).Quo(new(big.Rat).SetInt64(now-g.next), g.stable)
		g.stored = ratMin(g.maxP, idle.Add(idle, g.stored))
		g.next = now
	}
}

func ratMin(a, b *big.Rat) *big.Rat {
	if a.Cmp(b) < 0 {
		return a
	}
	return b
}

// tryAcquire is Guava's tryAcquire without the sleep: the decision and the wait in micros.
func (g *ratBursty) tryAcquire(n int, timeout, now int64) (ok bool, wait int64) {
	if g.next-timeout > now {
		return false, g.next - now
	}
	g.resync(now)
	at := g.next
	need := new(big.Rat).SetInt64(int64(n))
	spend := ratMin(need, g.stored)
	fresh := new(big.Rat).Sub(need, spend)
	cost := fresh.Mul(fresh, g.stable)
	g.next += new(big.Int).Quo(cost.Num(), cost.Denom()).Int64() // truncated, as Java's (long)
	g.stored = new(big.Rat).Sub(g.stored, spend)
	return true, max(at-now, 0)
}

func (g *ratBursty) storedAt(now int64) float64 {
	cp := *g
	cp.resync(now)
	f, _ := cp.stored.Float64()
	return f
}

// TestGuavaBurstyDifferential runs random calls (idle time, reservations
// of random size and timeout, rate changes) on the one-word limiter and on
// Guava's formulas in exact arithmetic, and wants the same decisions and
// the same waits to the microsecond. At rates whose interval is a whole
// number of nanoseconds the one-word limiter computes exactly, so they
// must agree exactly; at others the word rounds each stored permit spent
// to the nanosecond, and waits may drift a microsecond or two apart.
func TestGuavaBurstyDifferential(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 31))
	whole := []float64{5, 0.5, 1000, 4, 25, 1e4, 0.25, 1e6}
	other := []float64{3, 7.3, 123.456, 1e6 / 3, 0.3}
	for trial := range 300 {
		exact := trial%2 == 0
		rates := whole
		if !exact {
			rates = other
		}
		s := newStopwatch(t)
		rate, burst := rates[rnd.IntN(len(rates))], []float64{1, 0.25, 2.5, 0}[rnd.IntN(4)]
		l := s.bursty(rate, WithMaxBurstSeconds(burst))
		g := &ratBursty{b: rat(burst), maxP: new(big.Rat), stored: new(big.Rat)}
		g.setRate(rate, 0)
		slack := int64(0) // micros
		if !exact {
			slack = 2
		}
		for step := range 300 {
			s.clk.Advance(time.Duration(rnd.Int64N(int64(3 * time.Second / time.Duration(max(rate, 1))))))
			now := s.clk.Nanotime()
			m := now / 1000
			if rnd.IntN(10) == 0 {
				rate = rates[rnd.IntN(len(rates))]
				if err := l.SetRate(rate); err != nil {
					t.Fatal(err)
				}
				g.setRate(rate, m)
				continue
			}
			n := 1 + rnd.IntN(4)
			maxWait := time.Duration(rnd.Int64N(int64(2 * time.Second)))
			timeout := int64(maxWait / time.Microsecond)
			margin := g.next - timeout - m // Guava grants iff margin <= 0
			r, _ := l.TryReserveAt(now, n, maxWait)
			ok, wait := g.tryAcquire(n, timeout, m)
			got := int64(r.Wait / time.Microsecond)
			if r.OK != ok && (margin > slack || margin < -slack) || got-wait > slack || wait-got > slack {
				t.Fatalf("trial %d step %d (rate %v burst %v, %d permits, maxWait %v): got %+v, Guava ok %v wait %dus",
					trial, step, rate, burst, n, maxWait, r, ok, wait)
			}
			if r.OK != ok { // within slack of the boundary: the states part here
				t.Logf("trial %d step %d: a decision %dus from the boundary differs", trial, step, margin)
				break
			}
			// Stored permits: exact but for float division, plus, at other
			// rates, up to a nanosecond's worth per call (rounded in the
			// caller's favour) and the slack's.
			tol := 1e-9 * max(1, g.storedAt(m))
			if !exact {
				tol += float64(step+1)*rate/1e9 + float64(slack)*rate/1e6
			}
			if got, want := l.StoredPermitsAt(now), g.storedAt(m); got-want > tol || want-got > tol {
				t.Fatalf("trial %d step %d (rate %v burst %v): stored %v, Guava %v (next %d, word %d)", trial, step, rate, burst, got, want, g.next, snap(l).word)
			}
		}
	}
}
