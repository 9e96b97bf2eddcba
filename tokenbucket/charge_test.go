package tokenbucket

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// TestChargeBursty: a charge spends the stored permits, owes the rest, and
// later requests wait for the debt; maxOwed cuts what one charge may owe.
func TestChargeBursty(t *testing.T) {
	for _, tc := range []struct {
		name             string
		charge           int
		maxOwed          float64
		charged, storedA float64       // charged, and stored right after
		wait             time.Duration // the next single permit's wait: the debt (Guava's next request pays the last one's cost)
	}{
		{"from the store", 4, 100, 4, 6, 0},
		{"the store and a debt", 15, 100, 15, 0, 500 * time.Millisecond},
		{"the debt cut at maxOwed", 30, 3, 13, 0, 300 * time.Millisecond},
		{"no debt allowed", 30, 0, 10, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			l, err := NewBursty(10, WithClock(clk), WithStoredPermits(10)) // full: 10 stored, 100ms each
			if err != nil {
				t.Fatal(err)
			}
			now := clock.Nanotime(clk)
			if got := l.Charge(now, tc.charge, tc.maxOwed); got != tc.charged {
				t.Fatalf("Charge(%d, maxOwed %v) = %v, want %v", tc.charge, tc.maxOwed, got, tc.charged)
			}
			if got := l.StoredPermitsAt(now); got != tc.storedA {
				t.Errorf("stored after: %v, want %v", got, tc.storedA)
			}
			r, err := l.TryReserveAt(now, 1, time.Hour)
			if err != nil || !r.OK || r.Wait != tc.wait {
				t.Errorf("next permit: %+v %v, want a wait of %v", r, err, tc.wait)
			}
		})
	}
}

// TestChargeOwesNoMoreThanMaxOwed: charges one after another never leave
// more than maxOwed owed, and a charge while that much is owed takes nothing.
func TestChargeOwesNoMoreThanMaxOwed(t *testing.T) {
	clk := clock.NewFake(epoch)
	l, err := NewBursty(10, WithClock(clk), WithStoredPermits(0))
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Nanotime(clk)
	total := 0.0
	for range 5 {
		total += l.Charge(now, 3, 5)
	}
	if total != 5 {
		t.Fatalf("charged %v in all, want 5 (maxOwed)", total)
	}
	if w := time.Duration(l.word.Load() - now); w != 500*time.Millisecond {
		t.Fatalf("owed %v, want 500ms (5 permits at 10/s)", w)
	}
	// The debt is paid by time: 500ms later a permit passes at once.
	clk.Advance(500 * time.Millisecond)
	if r, _ := l.TryReserveAt(clock.Nanotime(clk), 1, 0); !r.OK {
		t.Fatalf("after the debt: refused %+v", r)
	}
}

// TestChargeWarmingUp: a warming-up limiter spends its stored permits at
// their warm-up cost and owes fresh ones at the stable interval; maxOwed
// bounds the time owed, cold stored permits counting at their cost.
func TestChargeWarmingUp(t *testing.T) {
	clk := clock.NewFake(epoch)
	l, err := NewWarmingUp(10, 2*time.Second, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Nanotime(clk)
	// Drain the cold store with a first reservation, then wait it out:
	// the limiter is warm and empty, owing nothing.
	stored := l.StoredPermitsAt(now)
	if r, _ := l.TryReserveAt(now, int(stored), time.Hour); !r.OK {
		t.Fatal("draining the store was refused")
	}
	clk.Advance(time.Duration(nextFree(l)-l.micros(now)) * time.Microsecond)
	now = clock.Nanotime(clk)
	if got := l.Charge(now, 8, 5); got != 5 {
		t.Fatalf("charged %v, want 5 (maxOwed at the stable interval)", got)
	}
	if owed := nextFree(l) - l.micros(now); owed != 500_000 {
		t.Errorf("owed %dµs, want 500000 (5 permits at 10/s)", owed)
	}
	if got := l.Charge(now, 1, 5); got != 0 {
		t.Errorf("a charge while maxOwed is owed took %v, want 0", got)
	}
}
