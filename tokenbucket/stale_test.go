package tokenbucket

import (
	"math"
	"testing"
	"time"
)

// TestStaleNowServedAtItsOwnNow: a caller whose now is older than a moment
// already committed sees the permits stored up to its own now, and takes
// them from the same store, so what it leaves is what it would leave had
// it come at the later moment.
func TestStaleNowServedAtItsOwnNow(t *testing.T) {
	s := newStopwatch(t)
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	b := s.bursty(10, WithStoredPermits(5)) // 100ms per permit, 5 stored
	if r, _ := b.TryReserveAt(ms(50), 1, 0); !r.OK || r.Wait != 0 || r.Stored != 4.5 {
		// at 50ms: 0.5 permit credited, one taken
		t.Fatalf("first reservation = %+v, want OK, no wait, 4.5 stored", r)
	}
	// 10ms stale: 4.4 permits were stored at 40ms.
	r, _ := b.TryReserveAt(ms(40), 1, 0)
	if !r.OK || r.Wait != 0 || math.Abs(r.Stored-3.4) > 1e-9 {
		t.Fatalf("stale now with stored permits = %+v, want OK, no wait, 3.4 stored", r)
	}
	if got := b.StoredPermitsAt(ms(50)); got != 3.5 {
		t.Fatalf("stored at 50ms = %v, want 3.5 (5.5 credited, 2 taken)", got)
	}
	// Drain the store: the last one goes into debt (Guava), then a stale now
	// is a real wait and is refused with the honest time.
	r, _ = b.TryReserveAt(ms(50), 4, 0)
	if !r.OK || r.Stored != 0 {
		t.Fatalf("draining = %+v, want OK and 0 stored", r)
	}
	r, _ = b.TryReserveAt(ms(40), 1, 0)
	if r.OK || r.Wait != 60*time.Millisecond {
		t.Fatalf("stale now in debt = %+v, want refused with wait 60ms (nextFree 100ms)", r)
	}
	// A bucket emptied exactly at 100ms was empty until then: a caller
	// 5ms stale is refused with 5ms to wait, where one at 100ms gets the
	// free request.
	e := s.bursty(10)
	if r, _ := e.TryReserveAt(ms(100), 1, 0); !r.OK || r.Stored != 0 {
		t.Fatalf("the permit stored by 100ms = %+v, want OK and 0 stored", r)
	}
	if r, _ := e.TryReserveAt(ms(95), 1, 0); r.OK || r.Wait != 5*time.Millisecond {
		t.Fatalf("5ms stale at the empty instant = %+v, want refused with wait 5ms", r)
	}
	if r, _ := e.TryReserveAt(ms(100), 1, 0); !r.OK || r.Wait != 0 {
		t.Fatalf("at 100ms = %+v, want the free request", r)
	}
}

// TestStaleNowWarmingUpStillWaits documents the limit: a warming-up limiter's
// stored permits cost time, so nextFree ahead of now may be a debt.
func TestStaleNowWarmingUpStillWaits(t *testing.T) {
	s := newStopwatch(t)
	w := s.warming(10, time.Second, 3)
	r, _ := w.TryReserveAt(0, 1, 0)
	if !r.OK {
		t.Fatalf("first = %+v", r)
	}
	next := nextFree(w)
	if next <= 0 {
		t.Fatalf("nextFree = %v, want > 0: a cold permit costs time", next)
	}
	if r, _ := w.TryReserveAt(0, 1, 0); r.OK || r.Wait != microsToDuration(next) {
		t.Fatalf("second at the same now = %+v, want refused with wait %vus", r, next)
	}
}

// TestReservationStoredMatchesStoredPermitsAt: Stored is what a read right
// after the reservation reports, for every kind of limiter and at +Inf.
func TestReservationStoredMatchesStoredPermitsAt(t *testing.T) {
	s := newStopwatch(t)
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	lims := map[string]*Limiter{
		"bursty":  s.bursty(10, WithMaxBurstSeconds(2)),
		"warming": s.warming(10, time.Second, 3),
		"inf":     s.bursty(math.Inf(1)),
	}
	for name, l := range lims {
		for i := int64(0); i < 40; i++ {
			now := ms(i * 37)
			r, _ := l.TryReserveAt(now, int(1+i%3), 50*time.Millisecond)
			if !r.OK {
				if r.Stored != 0 {
					t.Fatalf("%s: refused with Stored %v", name, r.Stored)
				}
				continue
			}
			if got := l.StoredPermitsAt(now); got != r.Stored && !(math.IsInf(got, 1) && math.IsInf(r.Stored, 1)) {
				t.Fatalf("%s at %dms: Stored %v, StoredPermitsAt %v", name, i*37, r.Stored, got)
			}
		}
	}
}
