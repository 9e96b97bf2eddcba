package tokenbucket

import (
	"testing"
	"time"
)

// view is a limiter's whole state, for comparisons.
type view struct {
	word   int64   // bursty: the instant the bucket is empty, ns since origin
	next   int64   // warming up: Guava's nextFree, micros since origin
	stored float64 // warming up: Guava's stored permits
	*rateConfig
}

// snap reads the limiter's whole state.
func snap(l *Limiter) view {
	if w := l.warm; w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		return view{next: w.next, stored: w.stored, rateConfig: l.rate.Load()}
	}
	e := l.word.Load()
	return view{word: e, rateConfig: l.rate.Load()}
}

// nextFree is Guava's nextFree in micros: a warming-up limiter's, or a
// bursty limiter's word, which is nextFree while the bucket owes.
func nextFree(l *Limiter) int64 {
	if v := snap(l); l.warm == nil {
		return v.word / 1000
	} else {
		return v.next
	}
}

func TestRefund(t *testing.T) {
	s := newStopwatch(t)
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }

	// Fresh permits: nextFree goes back.
	b := s.bursty(5)
	for range 3 {
		before := snap(b)
		if r, _ := b.TryReserveAt(0, 2, time.Second); !r.OK {
			t.Fatalf("TryReserveAt refused: %+v", r)
		}
		b.Refund(0, 2)
		if after := snap(b); after != before {
			t.Fatalf("Refund right after the reservation: state %+v, want %+v", after, before)
		}
	}

	// Stored permits: they come back, never above maxPermits.
	b.Refund(ms(1000), 0)
	if r, _ := b.TryReserveAt(ms(1000), 3, 0); !r.OK {
		t.Fatalf("burst refused: %+v", r)
	}
	if got := b.StoredPermitsAt(ms(1000)); got != 2 {
		t.Fatalf("stored after taking 3 of 5 = %v, want 2", got)
	}
	b.Refund(ms(1000), 3)
	if got := b.StoredPermitsAt(ms(1000)); got != 5 {
		t.Fatalf("stored after Refund = %v, want 5", got)
	}
	b.Refund(ms(1000), 10)
	if got := b.StoredPermitsAt(ms(1000)); got != 5 {
		t.Fatalf("stored after an excess Refund = %v, want maxPermits 5", got)
	}

	// Late: the refund leaves the state the limiter would have had without
	// the reservation (nextFree never goes before now; the idle time since
	// the earlier debt was paid is credited as stored permits).
	c := s.bursty(5)
	c.TryReserveAt(0, 1, 0)           // free, next at 200ms
	c.TryReserveAt(0, 1, time.Second) // next at 400ms
	c.Refund(ms(300), 1)
	want := s.bursty(5)
	want.TryReserveAt(0, 1, 0)
	want.Refund(ms(300), 0) // no-op
	// Guava's state: nextFree 300ms, 0.5 permit stored; one word: empty
	// at 200ms.
	if got := snap(c).word; got != 200_000_000 {
		t.Fatalf("word after a late Refund = %dns, want 200000000ns", got)
	}
	if got, w := c.StoredPermitsAt(ms(300)), want.StoredPermitsAt(ms(300)); got != w || got != 0.5 {
		t.Fatalf("late Refund: stored %v, without the reservation %v; want both 0.5", got, w)
	}

	// Warming up: refunding stored permits also undoes their (trapezoid) cost.
	w := s.warming(2, 4*time.Second, 3)
	now := s.clk.Nanotime()
	for range 4 {
		before := snap(w)
		r, _ := w.TryReserveAt(now, 1, time.Hour)
		if !r.OK {
			t.Fatalf("warming TryReserveAt refused: %+v", r)
		}
		w.Refund(now, 1)
		if after := snap(w); after != before {
			t.Fatalf("warming Refund: state %+v, want %+v", after, before)
		}
		w.TryReserveAt(now, 1, time.Hour) // move along the ramp
	}
}
