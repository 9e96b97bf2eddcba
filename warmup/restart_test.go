package warmup

import (
	"sync"
	"testing"
	"time"
)

// TestRestartStartsFresh: a used clone restarted from a prototype (of its
// own rate, or of another) decides every later call as a clone of that
// prototype made at the same moment, and shares the prototype's rate data
// where it can.
func TestRestartStartsFresh(t *testing.T) {
	s := newStopwatch(t)
	cases := map[string][2]func() *Limiter{
		"bursty":      {func() *Limiter { return s.bursty(5, WithMaxBurstSeconds(2)) }, func() *Limiter { return s.bursty(20, WithMaxBurstSeconds(2)) }},
		"bursty full": {func() *Limiter { return s.bursty(5, WithStoredPermits(100)) }, func() *Limiter { return s.bursty(8, WithStoredPermits(100)) }},
		"warming":     {func() *Limiter { return s.warming(10, time.Second, 3) }, func() *Limiter { return s.warming(30, time.Second, 3) }},
	}
	for name, c := range cases {
		for _, other := range []bool{false, true} {
			protoA := c[0]()
			l := protoA.Clone()
			for i := range 9 { // spend and queue on l
				l.TryReserveAt(s.clk.Nanotime()+int64(i)*int64(time.Millisecond), 2, 50*time.Millisecond)
			}
			if err := l.SetRate(7); err != nil { // and move it off the shared rate
				t.Fatal(err)
			}
			s.clk.Advance(1300 * time.Millisecond)
			from := protoA
			if other {
				from = c[1]()
			}
			l.Restart(from)
			fresh := from.Clone()
			if l.Rate() != fresh.Rate() {
				t.Fatalf("%s (other %v): rate %v after Restart, want %v", name, other, l.Rate(), fresh.Rate())
			}
			now := s.clk.Nanotime()
			for i := range 40 {
				at := now + int64(i)*23*int64(time.Millisecond)
				a, _ := l.TryReserveAt(at, 1+i%3, 30*time.Millisecond)
				b, _ := fresh.TryReserveAt(at, 1+i%3, 30*time.Millisecond)
				if a != b {
					t.Fatalf("%s (other %v): call %d: restarted %+v, fresh %+v", name, other, i, a, b)
				}
			}
		}
	}
	// Restarted from the prototype whose rate data it still shares, a
	// clone keeps sharing it (no allocation).
	p := s.bursty(5)
	l := p.Clone()
	l.TryReserveAt(s.clk.Nanotime(), 3, 0)
	l.Restart(p)
	if l.rate.Load() != p.rate.Load() {
		t.Fatal("Restart from its own prototype left the shared rate data")
	}
	if n := testing.AllocsPerRun(100, func() { l.Restart(p) }); n != 0 {
		t.Fatalf("Restart from its own prototype allocates %v times", n)
	}
}

// TestRestartWhileUsed: Restart against concurrent reservations, refunds
// and SetRate (run with -race): every state the callers see is whole.
func TestRestartWhileUsed(t *testing.T) {
	s := newStopwatch(t)
	pa, pb := s.bursty(1000, WithMaxBurstSeconds(1)), s.bursty(10, WithMaxBurstSeconds(1))
	l := pa.Clone()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r, _ := l.TryReserveAt(s.clk.Nanotime(), 1, 0)
				if r.OK && (i+g)%3 == 0 {
					l.Refund(s.clk.Nanotime(), 1)
				}
				if stored, maxP := storedView(l, s.clk.Nanotime()); stored < 0 || stored > maxP {
					t.Errorf("stored %v outside [0, %v]", stored, maxP)
					return
				}
			}
		}()
	}
	for i := range 2000 {
		switch i % 3 {
		case 0:
			l.Restart(pa)
		case 1:
			l.Restart(pb)
		default:
			if err := l.SetRate(float64(100 + i)); err != nil {
				t.Error(err)
			}
		}
	}
	close(stop)
	wg.Wait()
}
