package warmup

import (
	"math"
	"testing"
	"time"
)

// TestStaleNowWithStoredPermits: a caller whose now is older than a moment
// already committed is served as if it had read the clock at that moment,
// when the bursty limiter owes nothing (permits stored).
func TestStaleNowWithStoredPermits(t *testing.T) {
	s := newStopwatch(t)
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	b := s.bursty(10, WithStoredPermits(5)) // 100ms per permit, 5 stored
	if r, _ := b.TryReserveAt(ms(50), 1, 0); !r.OK || r.Wait != 0 || r.Stored != 4.5 {
		// at 50ms: 0.5 permit credited (capped at 5), one taken
		t.Fatalf("first reservation = %+v, want OK, no wait, 4.5 stored", r)
	}
	// 10ms stale: nextFree is 50ms, 4.5 permits stored.
	r, _ := b.TryReserveAt(ms(40), 1, 0)
	if !r.OK || r.Wait != 0 || r.Stored != 3.5 {
		t.Fatalf("stale now with stored permits = %+v, want OK, no wait, 3.5 stored", r)
	}
	if got := nextFree(b); got != 50000 {
		t.Fatalf("nextFree = %vus, want 50000 (the stale call moves nothing)", got)
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
