package tokenbucket

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// stopwatch is the test's FakeStopwatch: a clock.Fake plus the events seen.
type stopwatch struct {
	t      *testing.T
	clk    *clock.Fake
	events []string
}

func newStopwatch(t *testing.T) *stopwatch {
	return &stopwatch{t: t, clk: clock.NewFake(epoch)}
}

func (s *stopwatch) bursty(rate float64, opts ...Option) *Limiter {
	s.t.Helper()
	l, err := NewBursty(rate, append([]Option{WithClock(s.clk)}, opts...)...)
	if err != nil {
		s.t.Fatalf("NewBursty(%v): %v", rate, err)
	}
	return l
}

func (s *stopwatch) warming(rate float64, warmup time.Duration, coldFactor float64) *Limiter {
	s.t.Helper()
	l, err := NewWarmingUp(rate, warmup, WithClock(s.clk), WithColdFactor(coldFactor))
	if err != nil {
		s.t.Fatalf("NewWarmingUp(%v, %v, %v): %v", rate, warmup, coldFactor, err)
	}
	return l
}

func (s *stopwatch) acquire(l *Limiter, n int) {
	s.t.Helper()
	before := s.clk.Nanotime()
	d, err := l.Acquire(context.Background(), n)
	if err != nil {
		s.t.Fatalf("Acquire(%d): %v", n, err)
	}
	if slept := time.Duration(s.clk.Nanotime() - before); slept != d {
		s.t.Fatalf("Acquire(%d) returned %v but the clock moved %v", n, d, slept)
	}
	s.events = append(s.events, "R"+seconds(d))
}

func (s *stopwatch) sleepMillis(ms int) {
	d := time.Duration(ms) * time.Millisecond
	s.clk.Advance(d)
	s.events = append(s.events, "U"+seconds(d))
}

// assertEvents compares and clears the events; each argument may hold several
// events separated by ", " as in Guava's test.
func (s *stopwatch) assertEvents(want ...string) {
	s.t.Helper()
	got := strings.Join(s.events, ", ")
	if w := strings.Join(want, ", "); got != w {
		s.t.Fatalf("events\n got %s\nwant %s", got, w)
	}
	s.events = s.events[:0]
}

// seconds formats d as Java's String.format("%3.2f", micros/1e6): HALF_UP on
// the decimal value, which micros/1e6 holds exactly (Go's %.2f rounds half to
// even: 0.625 would print 0.62, Guava prints 0.63).
func seconds(d time.Duration) string {
	micros := int64(d / time.Microsecond)
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	h := (micros + 5000) / 10000
	return fmt.Sprintf("%s%d.%02d", sign, h/100, h%100)
}

func TestSecondsFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		625 * time.Millisecond:      "0.63",
		1125 * time.Millisecond:     "1.13",
		1375 * time.Millisecond:     "1.38",
		0:                           "0.00",
		4 * time.Microsecond:        "0.00",
		5 * time.Millisecond:        "0.01",
		12345678 * time.Microsecond: "12.35",
	} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %q, want %q", d, got, want)
		}
	}
}

func (s *stopwatch) acquireN(l *Limiter, times int) {
	s.t.Helper()
	for range times {
		s.acquire(l, 1)
	}
}

func (s *stopwatch) try(l *Limiter, permits int, timeout time.Duration) bool {
	s.t.Helper()
	ok, err := l.TryAcquire(context.Background(), permits, timeout)
	if err != nil {
		s.t.Fatalf("TryAcquire(%d, %v): %v", permits, timeout, err)
	}
	return ok
}

func (s *stopwatch) wantTry(l *Limiter, permits int, timeout time.Duration, want bool) {
	s.t.Helper()
	if got := s.try(l, permits, timeout); got != want {
		s.t.Fatalf("at %v TryAcquire(%d, %v) = %v, want %v",
			time.Duration(s.clk.Nanotime()), permits, timeout, got, want)
	}
}

// measureTotalTime is Guava's measureTotalTimeMillis: spend permits in random
// chunks, then one more to repay the debt; report the virtual time taken.
func (s *stopwatch) measureTotalTime(l *Limiter, permits int, rnd *rand.Rand) time.Duration {
	s.t.Helper()
	start := s.clk.Nanotime()
	for permits > 0 {
		n := max(1, rnd.IntN(permits))
		permits -= n
		if _, err := l.Acquire(context.Background(), n); err != nil {
			s.t.Fatal(err)
		}
	}
	if _, err := l.Acquire(context.Background(), 1); err != nil {
		s.t.Fatal(err)
	}
	return time.Duration(s.clk.Nanotime() - start)
}
