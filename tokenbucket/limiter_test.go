package tokenbucket

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/flowgate/flowgate/clock"
)

func TestInvalidArguments(t *testing.T) {
	c := WithClock(clock.NewFake(epoch))
	nan, inf := math.NaN(), math.Inf(1)
	for name, mk := range map[string]func() (*Limiter, error){
		"bursty rate 0":      func() (*Limiter, error) { return NewBursty(0, c) },
		"bursty rate -1":     func() (*Limiter, error) { return NewBursty(-1, c) },
		"bursty rate NaN":    func() (*Limiter, error) { return NewBursty(nan, c) },
		"bursty rate -Inf":   func() (*Limiter, error) { return NewBursty(-inf, c) },
		"burst seconds -1":   func() (*Limiter, error) { return NewBursty(1, c, WithMaxBurstSeconds(-1)) },
		"burst seconds NaN":  func() (*Limiter, error) { return NewBursty(1, c, WithMaxBurstSeconds(nan)) },
		"burst seconds Inf":  func() (*Limiter, error) { return NewBursty(1, c, WithMaxBurstSeconds(inf)) },
		"stored NaN":         func() (*Limiter, error) { return NewBursty(1, c, WithStoredPermits(nan)) },
		"warming rate 0":     func() (*Limiter, error) { return NewWarmingUp(0, time.Second, c) },
		"warming period < 0": func() (*Limiter, error) { return NewWarmingUp(1, -time.Nanosecond, c) },
		"cold factor 0.5":    func() (*Limiter, error) { return NewWarmingUp(1, time.Second, c, WithColdFactor(0.5)) },
		"cold factor NaN":    func() (*Limiter, error) { return NewWarmingUp(1, time.Second, c, WithColdFactor(nan)) },
		"cold factor Inf":    func() (*Limiter, error) { return NewWarmingUp(1, time.Second, c, WithColdFactor(inf)) },
		"warming stored NaN": func() (*Limiter, error) { return NewWarmingUp(1, time.Second, c, WithStoredPermits(nan)) },
	} {
		l, err := mk()
		if l != nil || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: got (%v, %v), want (nil, ErrInvalidArgument)", name, l, err)
		}
	}

	// Every problem is reported, not only the first.
	_, err := NewWarmingUp(-1, -time.Second, c, WithColdFactor(0))
	for _, part := range []string{"rate -1", "warmupPeriod -1s", "coldFactor 0"} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("NewWarmingUp error %q does not mention %q", err, part)
		}
	}

	l, err := NewBursty(1, c)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []int{0, -1, math.MinInt} {
		if _, err := l.Acquire(ctx, n); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Acquire(%d) error = %v", n, err)
		}
		if ok, err := l.TryAcquire(ctx, n, time.Second); ok || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("TryAcquire(%d) = %v, %v", n, ok, err)
		}
		if _, err := l.Reserve(n); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Reserve(%d) error = %v", n, err)
		}
		if r, err := l.TryReserveAt(0, n, 0); r.OK || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("TryReserveAt(%d) = %+v, %v", n, r, err)
		}
		l.Refund(0, n) // a no-op, not a panic
	}
	for _, r := range []float64{0, -1, nan, -inf} {
		if err := l.SetRate(r); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("SetRate(%v) error = %v", r, err)
		}
	}
	if got := l.Rate(); got != 1 {
		t.Errorf("Rate after refused SetRate calls = %v, want 1", got)
	}
	// The limiter still works after the refused calls: one free request.
	if r, _ := l.TryReserveAt(0, 1, 0); !r.OK {
		t.Errorf("TryReserveAt after invalid calls refused: %+v", r)
	}
}

func TestJavaLongSaturates(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want int64
	}{
		{math.NaN(), 0},
		{math.Inf(1), math.MaxInt64},
		{math.Inf(-1), math.MinInt64},
		{1e300, math.MaxInt64},
		{-1e300, math.MinInt64},
		{math.Exp2(63), math.MaxInt64},
		{-math.Exp2(63), math.MinInt64},
		{2.9, 2},
		{-2.9, -2},
		{0.5, 0},
		{4503599627370497, 4503599627370497},
	} {
		if got := javaLong(c.in); got != c.want {
			t.Errorf("javaLong(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestSaturatedAdd(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{
		{1, 2, 3},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{math.MinInt64, -1, math.MinInt64},
		{math.MaxInt64, math.MinInt64, -1},
		{-5, 3, -2},
	} {
		if got := saturatedAdd(c.a, c.b); got != c.want {
			t.Errorf("saturatedAdd(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if got := microsToDuration(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("microsToDuration(MaxInt64) = %d", got)
	}
	if got := microsToDuration(1500); got != 1500*time.Microsecond {
		t.Errorf("microsToDuration(1500) = %v", got)
	}
}

func TestHugeRequestsSaturate(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(1e-300) // a stable interval of 1e306 micros: every fresh permit costs "forever"
	if r, err := l.TryReserveAt(0, math.MaxInt, 0); err != nil || !r.OK || r.Wait != 0 {
		t.Fatalf("first TryReserveAt = %+v, %v; want granted at once", r, err)
	}
	r, _ := l.TryReserveAt(0, 1, math.MaxInt64)
	if r.OK || r.Wait != math.MaxInt64 {
		t.Fatalf("TryReserveAt after saturation = %+v, want refused with Wait MaxInt64", r)
	}
	if d, err := l.Reserve(math.MaxInt); err != nil || d != math.MaxInt64 {
		t.Fatalf("Reserve = %v, %v; want the saturated wait", d, err)
	}
	if w := l.word.Load(); w != never {
		t.Fatalf("word = %d, want saturated at %d (no wrap)", w, int64(never))
	}
}

// TestReservationRefill: Refill is the missing permits at the limiter's
// cool-down rate (the stable interval for bursty, warmupPeriod/maxPermits
// warming up).
func TestReservationRefill(t *testing.T) {
	s := newStopwatch(t)
	now := s.clk.Nanotime()
	b := s.bursty(5, WithStoredPermits(5)) // 200ms a permit, 5 stored
	if r, err := b.TryReserveAt(now, 2, 0); err != nil || r.Stored != 3 || r.Refill != 400*time.Millisecond {
		t.Fatalf("bursty: %+v, %v; want 3 stored, Refill 400ms", r, err)
	}
	// 2/s, 4s warm-up, cold factor 3: maxPermits 8, starting cold (full).
	w := s.warming(2, 4*time.Second, 3)
	if r, err := w.TryReserveAt(now, 1, time.Hour); err != nil || r.Stored != 7 || r.Refill != 500*time.Millisecond {
		t.Fatalf("warming up: %+v, %v; want 7 stored, Refill 500ms (4s / 8 permits)", r, err)
	}
	if r, _ := b.TryReserveAt(now, 4, 0); !r.OK || r.Refill != time.Second {
		t.Fatalf("bursty, 3 stored and 1 fresh: %+v, want granted, Refill 1s", r)
	}
	if r, _ := b.TryReserveAt(now, 1, 0); r.OK {
		t.Fatalf("bursty, in debt: %+v, want refused", r)
	} else if r.Refill != 0 {
		t.Fatalf("refused: Refill %v, want 0", r.Refill)
	}
}

func TestTryReserveAt(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(5)
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	steps := []struct {
		now     int64
		maxWait time.Duration
		want    Reservation
	}{
		// Every grant below leaves nothing stored: 5 permits to refill, 1s.
		{0, 0, Reservation{OK: true, Refill: time.Second}}, // first request is free
		{0, 0, Reservation{Wait: 200 * time.Millisecond}},  // the next waits for its debt
		{0, 200 * time.Millisecond, Reservation{OK: true, Wait: 200 * time.Millisecond, Refill: time.Second}},
		{ms(100), 0, Reservation{Wait: 300 * time.Millisecond}},                        // next free at 400ms
		{ms(100), -time.Hour, Reservation{Wait: 300 * time.Millisecond}},               // negative counts as 0
		{ms(100), 300*time.Millisecond - 1, Reservation{Wait: 300 * time.Millisecond}}, // micros truncate: 299.999ms
		{ms(400), 0, Reservation{OK: true, Refill: time.Second}},
		{ms(700), 0, Reservation{OK: true, Wait: 0, Refill: time.Second}}, // 100ms idle stored half a permit
	}
	for i, st := range steps {
		got, err := l.TryReserveAt(st.now, 1, st.maxWait)
		if err != nil || got != st.want {
			t.Fatalf("step %d: TryReserveAt(%v, 1, %v) = %+v, %v; want %+v",
				i, time.Duration(st.now), st.maxWait, got, err, st.want)
		}
	}
	// 0.5 stored permits went first, the other 0.5 was fresh: next free 100ms later.
	if got, want := nextFree(l), int64(800_000); got != want {
		t.Fatalf("nextFree = %dus, want %dus", got, want)
	}
	// A time from before construction counts as construction time.
	l2 := s.bursty(5)
	if r, _ := l2.TryReserveAt(s.clk.Nanotime()-int64(time.Hour), 1, 0); !r.OK {
		t.Fatalf("TryReserveAt before the origin refused: %+v", r)
	}
}

func TestStoredPermits(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(5, WithStoredPermits(3))
	if got := l.StoredPermitsAt(0); got != 3 {
		t.Fatalf("StoredPermitsAt(0) = %v, want 3", got)
	}
	s.acquire(l, 3)
	s.acquire(l, 1) // fresh, free: its cost falls on the next
	s.acquire(l, 1)
	s.assertEvents("R0.00", "R0.00", "R0.20")

	for _, c := range []struct{ in, want float64 }{{100, 5}, {-3, 0}, {2.5, 2.5}} {
		l := s.bursty(5, WithStoredPermits(c.in))
		if got := l.StoredPermitsAt(s.clk.Nanotime()); got != c.want {
			t.Errorf("WithStoredPermits(%v): stored = %v, want %v", c.in, got, c.want)
		}
	}

	w := s.warming(2, 4*time.Second, 3)
	if got, want := w.StoredPermitsAt(s.clk.Nanotime()), w.MaxPermits(); got != want || want != 8 {
		t.Fatalf("warming up starts with %v stored, want maxPermits %v (= 8)", got, want)
	}
	warm, err := NewWarmingUp(2, 4*time.Second, WithClock(s.clk), WithStoredPermits(0))
	if err != nil {
		t.Fatal(err)
	}
	s.acquireN(warm, 3)
	s.assertEvents("R0.00, R0.50, R0.50") // warm from the start: the stable rate

	// StoredPermitsAt credits idle time without changing the limiter.
	b := s.bursty(5)
	s.acquire(b, 1) // next free in 200ms
	s.events = s.events[:0]
	at := s.clk.Nanotime() + int64(600*time.Millisecond)
	for range 2 {
		if got := b.StoredPermitsAt(at); math.Abs(got-2) > 1e-9 {
			t.Fatalf("StoredPermitsAt(+600ms) = %v, want 2", got)
		}
	}
	if got := b.StoredPermitsAt(at + int64(time.Hour)); got != 5 {
		t.Fatalf("StoredPermitsAt(+1h) = %v, want maxPermits 5", got)
	}
	if got := b.StoredPermitsAt(s.clk.Nanotime()); got != 0 {
		t.Fatalf("StoredPermitsAt(now) = %v, want 0 (state unchanged)", got)
	}
	inf := s.bursty(math.Inf(1))
	if err := inf.SetRate(1); err != nil {
		t.Fatal(err)
	}
	if err := inf.SetRate(math.Inf(1)); err != nil { // Guava's rescale gives NaN stored here
		t.Fatal(err)
	}
	if got := inf.StoredPermitsAt(s.clk.Nanotime()); !math.IsInf(got, 1) {
		t.Fatalf("StoredPermitsAt at +Inf rate = %v, want +Inf", got)
	}
}

func TestAcquireContext(t *testing.T) {
	s := newStopwatch(t)
	l := s.bursty(0.1) // 10s per permit
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if d, err := l.Acquire(ctx, 1); d != 0 || err != nil {
		t.Fatalf("first Acquire = %v, %v", d, err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	defer cancelShort()
	before := snap(l)
	d, err := l.Acquire(short, 1)
	if !errors.Is(err, ErrWouldPassDeadline) || !errors.Is(err, context.DeadlineExceeded) || d != 0 {
		t.Fatalf("Acquire past the deadline = %v, %v; want ErrWouldPassDeadline", d, err)
	}
	if ok, err := l.TryAcquire(short, 1, time.Hour); ok || err != nil {
		t.Fatalf("TryAcquire(1h) under a 1s deadline = %v, %v; want false, nil", ok, err)
	}
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := l.Acquire(done, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire on a cancelled ctx = %v", err)
	}
	if ok, err := l.TryAcquire(done, 1, time.Hour); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire on a cancelled ctx = %v, %v", ok, err)
	}
	if after := snap(l); after != before {
		t.Fatalf("refused calls changed the limiter: %+v, want %+v", after, before)
	}
	if d, err := l.Acquire(ctx, 1); d != 10*time.Second || err != nil {
		t.Fatalf("Acquire within the deadline = %v, %v; want 10s", d, err)
	}
}

// failingSleep is a clock whose Sleep fails, as when ctx ends mid-wait.
type failingSleep struct{ *clock.Fake }

func (f failingSleep) Sleep(ctx context.Context, d time.Duration) error { return context.Canceled }

func TestCancelledWaitIsRefunded(t *testing.T) {
	c := failingSleep{clock.NewFake(epoch)}
	l, err := NewBursty(1, WithClock(c))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l.Acquire(ctx, 1) // free; next free in 1s
	before := snap(l)
	if _, err := l.Acquire(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a failing sleep = %v", err)
	}
	if after := snap(l); after != before {
		t.Fatalf("cancelled Acquire kept its permits: %+v, want %+v", after, before)
	}
	if ok, err := l.TryAcquire(ctx, 1, time.Hour); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire with a failing sleep = %v, %v", ok, err)
	}
	if after := snap(l); after != before {
		t.Fatalf("cancelled TryAcquire kept its permits: %+v, want %+v", after, before)
	}
}

func TestWarmUpZeroPeriod(t *testing.T) {
	// Guava accepts a zero warm-up; it must then behave as a plain stable rate
	// even after idle time (Guava itself would compute 0/0 there).
	s := newStopwatch(t)
	l := s.warming(2, 0, 3)
	s.acquireN(l, 3)
	s.sleepMillis(10_000)
	s.acquireN(l, 3)
	s.assertEvents("R0.00, R0.50, R0.50", "U10.00", "R0.00, R0.50, R0.50")
	if got := l.MaxPermits(); got != 0 {
		t.Fatalf("MaxPermits = %v, want 0", got)
	}
}

func TestLimiterIsSmall(t *testing.T) {
	// The flow engine keeps one limiter per user or IP key, by value: one
	// word of state, the shared rate, the origin, and the warming-up state
	// (nil for a bursty limiter).
	if size := unsafe.Sizeof(Limiter{}); size > 32 {
		t.Fatalf("a limiter takes %d bytes, want <= 32", size)
	}
}
