package tokenbucket

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

func TestConcurrentExactCount(t *testing.T) {
	// On a stopped clock 10 stored permits plus the one free request is all
	// that can be had, however many goroutines race for them.
	l, err := NewBursty(10, WithClock(clock.NewFake(epoch)), WithStoredPermits(10))
	if err != nil {
		t.Fatal(err)
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if r, _ := l.TryReserveAt(0, 1, 0); r.OK {
					granted.Add(1)
				}
				l.StoredPermitsAt(0)
			}
		}()
	}
	wg.Wait()
	if got := granted.Load(); got != 11 {
		t.Fatalf("granted %d permits, want 11", got)
	}
}

func TestConcurrentNeverOverRate(t *testing.T) {
	// Goroutines move a shared fake clock, reserve, refund, query and change
	// nothing else; the grants must stay within Guava's bound:
	// stored at start + elapsed*rate + the one request whose cost is unpaid.
	c := clock.NewFake(epoch)
	const rate = 1000.0
	l, err := NewWarmingUp(rate, time.Second, WithClock(c), WithStoredPermits(0))
	if err != nil {
		t.Fatal(err)
	}
	var granted, refunded atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				if i%7 == g%7 {
					c.Advance(137 * time.Microsecond)
				}
				now := c.Nanotime()
				if r, _ := l.TryReserveAt(now, 1+i%3, 50*time.Microsecond); r.OK {
					granted.Add(int64(1 + i%3))
					if i%5 == 0 {
						l.Refund(now, 1+i%3)
						refunded.Add(int64(1 + i%3))
					}
				}
				_ = l.StoredPermitsAt(now)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Duration(c.Nanotime()).Seconds()
	net := granted.Load() - refunded.Load()
	if bound := elapsed*rate + 3 + 1; float64(net) > bound+1e-9 {
		t.Fatalf("net grants %d over %.3fs, bound %.1f", net, elapsed, bound)
	}
	if net < int64(elapsed*rate/4) {
		t.Fatalf("net grants %d over %.3fs: far too few, the limiter is stuck", net, elapsed)
	}
	_ = l.Rate()
}

func TestConcurrentSetRate(t *testing.T) {
	c := clock.NewFake(epoch)
	l, err := NewBursty(1000, WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1500 {
				switch {
				case g < 2: // two writers racing each other and the readers
					if err := l.SetRate(float64(1000 * (1 + (i+g)%2))); err != nil {
						t.Error(err)
						return
					}
				case i%3 == 0:
					c.Advance(50 * time.Microsecond)
				default:
					if r, _ := l.TryReserveAt(c.Nanotime(), 1, 0); r.OK {
						granted.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	if r := l.Rate(); r != 1000 && r != 2000 {
		t.Fatalf("Rate() = %v after racing SetRates, want 1000 or 2000", r)
	}
	if got, want := l.MaxPermits(), l.Rate(); got != want {
		t.Fatalf("MaxPermits() = %v, want %v (one second at the current rate)", got, want)
	}
	// Never more than a full bucket at the higher rate plus the time elapsed
	// at the higher rate, plus the one request whose cost is unpaid.
	elapsed := time.Duration(c.Nanotime()).Seconds()
	if got, bound := float64(granted.Load()), 2000+elapsed*2000+1; got > bound {
		t.Fatalf("granted %v permits in %.4fs, bound %v", got, elapsed, bound)
	}
	if got := l.StoredPermitsAt(c.Nanotime()); got < 0 || got > l.MaxPermits() {
		t.Fatalf("stored permits %v outside [0, %v]", got, l.MaxPermits())
	}
}

// TestConcurrentSameInstantMatchesSerial: at one instant the outcome of
// one-permit calls does not depend on their order, so goroutines racing
// on a bursty limiter must be granted exactly what one goroutine is: the
// same reservations (stored, partly stored, fresh with a wait, refused)
// and the same state after.
func TestConcurrentSameInstantMatchesSerial(t *testing.T) {
	c := clock.NewFake(epoch)
	build := func() *Limiter {
		l, err := NewBursty(10, WithClock(c), WithStoredPermits(4.5))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	serial, racing := build(), build()
	now := c.Nanotime() + int64(30*time.Millisecond) // 0.3 permit more credited
	const calls, goroutines = 400, 8
	const maxWait = 350 * time.Millisecond
	want := make([]Reservation, calls)
	for i := range want {
		want[i], _ = serial.TryReserveAt(now, 1, maxWait)
	}
	got := make([]Reservation, calls)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < calls; i += goroutines {
				got[i], _ = racing.TryReserveAt(now, 1, maxWait)
			}
		}()
	}
	wg.Wait()
	order := func(rs []Reservation) {
		sort.Slice(rs, func(i, j int) bool {
			a, b := rs[i], rs[j]
			if a.OK != b.OK {
				return a.OK
			}
			if a.Wait != b.Wait {
				return a.Wait < b.Wait
			}
			return a.Stored > b.Stored
		})
	}
	order(want)
	order(got)
	// 4.8 stored: four from the store, one partly, four more with waits
	// of 20, 120, 220 and 320ms; the rest refused.
	if granted := sort.Search(calls, func(i int) bool { return !want[i].OK }); granted != 9 {
		t.Fatalf("serial run granted %d, want 9: %+v", granted, want[:10])
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reservation %d (sorted): racing %+v, serial %+v", i, got[i], want[i])
		}
	}
	if g, w := snap(racing).word, snap(serial).word; g != w {
		t.Fatalf("word after: racing %d, serial %d", g, w)
	}
}

// TestConcurrentSetRateAtOneInstant: goroutines take one permit each at one
// instant, until refused, from a full bucket of one second's burst whose
// rate another goroutine keeps switching between 100/s and 200/s. Every
// grant must be a Guava step at one rate or the other, costing 10ms or
// 5ms of the burst's second: then that second plus the debt left is a
// whole number of 5ms steps, between one and two per grant. A grant
// computed at a rate it did not use, or on a word it did not read, would
// break the count.
func TestConcurrentSetRateAtOneInstant(t *testing.T) {
	for round := range 20 {
		c := clock.NewFake(epoch)
		l, err := NewBursty(100, WithClock(c), WithStoredPermits(math.Inf(1)))
		if err != nil {
			t.Fatal(err)
		}
		now := c.Nanotime()
		stop, setterDone, first := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var sets atomic.Int64
		go func() {
			defer close(setterDone)
			var once sync.Once
			defer once.Do(func() { close(first) })
			for i := 0; ; i++ {
				if i == 1 {
					once.Do(func() { close(first) }) // the reservers start once a SetRate has run
				}
				select {
				case <-stop:
					return
				default:
				}
				if err := l.SetRate(float64(100 * (1 + i%2))); err != nil {
					t.Error(err)
					return
				}
				sets.Add(1)
			}
		}()
		var granted atomic.Int64
		var wg sync.WaitGroup
		<-first
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					r, _ := l.TryReserveAt(now, 1, 0)
					if !r.OK {
						return
					}
					granted.Add(1)
				}
			}()
		}
		wg.Wait()
		close(stop)
		<-setterDone
		r, _ := l.TryReserveAt(now, 1, 0)
		if r.OK {
			t.Fatalf("round %d: granted after every goroutine was refused: %+v", round, r)
		}
		const step = 5 * time.Millisecond
		g, spent := granted.Load(), time.Second+r.Wait
		if spent%step != 0 {
			t.Fatalf("round %d: %d grants spent %v (1s + debt %v): not whole 5ms steps", round, g, spent, r.Wait)
		}
		if steps := int64(spent / step); steps < g || steps > 2*g {
			t.Fatalf("round %d: %d grants spent %d steps of 5ms, want %d to %d", round, g, steps, g, 2*g)
		}
		if g < 101 || g > 201 {
			t.Fatalf("round %d: granted %d, want 101 (all at 100/s) to 201 (all at 200/s)", round, g)
		}
		if sets.Load() == 0 {
			t.Fatalf("round %d: no SetRate ran", round)
		}
	}
}
