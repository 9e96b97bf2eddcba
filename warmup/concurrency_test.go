package warmup

import (
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
