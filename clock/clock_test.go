package clock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeAdvanceAndSleep(t *testing.T) {
	f := NewFake(epoch)
	if got := f.Now(); !got.Equal(epoch) {
		t.Fatalf("Now() = %v, want %v", got, epoch)
	}
	f.Advance(1500 * time.Millisecond)
	if err := f.Sleep(context.Background(), 500*time.Millisecond); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
	if got, want := f.Now(), epoch.Add(2*time.Second); !got.Equal(want) {
		t.Fatalf("Now() = %v, want %v", got, want)
	}
	if got, want := Nanotime(f), int64(2*time.Second); got != want {
		t.Fatalf("Nanotime = %d, want %d", got, want)
	}
	f.Advance(-time.Hour)
	if got, want := f.Now(), epoch.Add(2*time.Second); !got.Equal(want) {
		t.Fatalf("negative Advance moved the clock: %v", got)
	}
	if f.Sleeps() != 1 {
		t.Fatalf("Sleeps() = %d, want 1", f.Sleeps())
	}
}

func TestFakeSleepCancelled(t *testing.T) {
	f := NewFake(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.Sleep(ctx, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on cancelled ctx = %v, want context.Canceled", err)
	}
	if !f.Now().Equal(epoch) {
		t.Fatalf("cancelled Sleep advanced the clock to %v", f.Now())
	}
}

func TestFakeSetBackwards(t *testing.T) {
	f := NewFake(epoch)
	f.Set(epoch.Add(-time.Second))
	if got, want := Nanotime(f), -int64(time.Second); got != want {
		t.Fatalf("Nanotime after Set = %d, want %d", got, want)
	}
}

func TestFakeConcurrent(t *testing.T) {
	f := NewFake(epoch)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				_ = f.Sleep(context.Background(), time.Millisecond)
				_ = f.Now()
			}
		}()
	}
	wg.Wait()
	if got, want := f.Now(), epoch.Add(1600*time.Millisecond); !got.Equal(want) {
		t.Fatalf("Now() = %v, want %v", got, want)
	}
}

func TestRealSleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := Real()
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep = %v, want context.Canceled", err)
	}
	if err := c.Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep(0) = %v", err)
	}
	if err := c.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep(1ms) = %v", err)
	}
}

func TestRealNanotimeMonotonic(t *testing.T) {
	a := Nanotime(Real())
	b := Nanotime(Real())
	if b < a {
		t.Fatalf("Nanotime went backwards: %d then %d", a, b)
	}
}

func BenchmarkRealNow(b *testing.B) {
	b.ReportAllocs()
	c := Real()
	for i := 0; i < b.N; i++ {
		_ = c.Now()
	}
}

func BenchmarkRealNanotime(b *testing.B) {
	b.ReportAllocs()
	c := Real()
	for i := 0; i < b.N; i++ {
		_ = Nanotime(c)
	}
}

func TestOrigin(t *testing.T) {
	f := NewFake(epoch.Add(1300 * time.Millisecond))
	f.Advance(time.Hour)
	if got := Origin(f); !got.Equal(epoch.Add(1300 * time.Millisecond)) {
		t.Fatalf("Origin(Fake) = %v, want its start", got)
	}
	// Real: origin plus Nanotime is the wall time, to within the two reads.
	before := time.Now()
	got := Origin(Real()).Add(time.Duration(Nanotime(Real())))
	after := time.Now()
	if got.Before(before.Add(-time.Millisecond)) || got.After(after.Add(time.Millisecond)) {
		t.Fatalf("Origin(Real)+Nanotime = %v, want within [%v, %v]", got, before, after)
	}
	if got := Origin(wallOnly{}); !got.Equal(time.Unix(0, 0)) {
		t.Fatalf("Origin of a non-monotonic clock = %v, want the Unix epoch", got)
	}
}

// wallOnly is a Clock without Nanotime: its Nanotime is Unix nanoseconds.
type wallOnly struct{}

func (wallOnly) Now() time.Time                                   { return time.Now() }
func (wallOnly) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }
