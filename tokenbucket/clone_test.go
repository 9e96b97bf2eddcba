package tokenbucket

import (
	"testing"
	"time"
)

// TestCloneStartsFresh: a clone behaves as a limiter built anew with the
// same arguments, shares its rate data, and a SetRate on one touches no other.
func TestCloneStartsFresh(t *testing.T) {
	s := newStopwatch(t)
	cases := map[string]func() *Limiter{
		"bursty":      func() *Limiter { return s.bursty(5, WithMaxBurstSeconds(2)) },
		"bursty full": func() *Limiter { return s.bursty(5, WithStoredPermits(100)) },
		"warming":     func() *Limiter { return s.warming(10, time.Second, 3) },
		"warming empty": func() *Limiter {
			l, err := NewWarmingUp(10, time.Second, WithClock(s.clk), WithStoredPermits(0))
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
	}
	for name, build := range cases {
		proto := build()
		// Use the prototype first: a clone must not inherit its state.
		for i := range 7 {
			proto.TryReserveAt(int64(i)*int64(time.Millisecond), 2, 0)
		}
		s.clk.Advance(time.Second)
		clone, fresh := proto.Clone(), build()
		if clone.rate.Load() != proto.rate.Load() {
			t.Fatalf("%s: the clone has its own rate data", name)
		}
		if got, want := snap(clone), snap(fresh); got.word != want.word || got.next != want.next || got.stored != want.stored || *got.rateConfig != *want.rateConfig {
			t.Fatalf("%s: clone %+v %+v, fresh %+v %+v", name, got, *got.rateConfig, want, *want.rateConfig)
		}
		now := s.clk.Nanotime()
		for i := range 30 {
			at := now + int64(i)*37*int64(time.Millisecond)
			a, _ := clone.TryReserveAt(at, 1+i%3, 20*time.Millisecond)
			b, _ := fresh.TryReserveAt(at, 1+i%3, 20*time.Millisecond)
			if a != b {
				t.Fatalf("%s: call %d: clone %+v, fresh %+v", name, i, a, b)
			}
		}
		if err := clone.SetRate(50); err != nil {
			t.Fatal(err)
		}
		if proto.Rate() != build().Rate() || clone.Rate() != 50 {
			t.Fatalf("%s: after the clone's SetRate(50): proto %v, clone %v", name, proto.Rate(), clone.Rate())
		}
	}
	// A clone of a limiter whose rate changed starts at the new rate, with
	// the constructor's options.
	p := s.bursty(5, WithStoredPermits(100))
	if err := p.SetRate(20); err != nil {
		t.Fatal(err)
	}
	c := p.Clone()
	if c.Rate() != 20 || c.StoredPermitsAt(s.clk.Nanotime()) != 20 {
		t.Fatalf("clone after SetRate(20): rate %v stored %v, want 20 and 20 (full: 1s burst)", c.Rate(), c.StoredPermitsAt(s.clk.Nanotime()))
	}
	if c.StableIntervalMicros() != 50000 {
		t.Fatalf("StableIntervalMicros = %v, want 50000", c.StableIntervalMicros())
	}
}
