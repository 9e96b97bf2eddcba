package tokenbucket_test

import (
	"context"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/tokenbucket"
)

func ExampleNewBursty() {
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, err := tokenbucket.NewBursty(5, tokenbucket.WithClock(c)) // 5 permits/s, stores up to 1 s of them
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 3 {
		waited, _ := l.Acquire(ctx, 1) // sleeps on the fake clock: returns at once
		fmt.Println("waited", waited)
	}
	c.Advance(10 * time.Second) // idle: the bucket fills, to 5 permits at most
	ok, _ := l.TryAcquire(ctx, 5, 0)
	fmt.Println("burst of 5:", ok, "stored now:", l.StoredPermitsAt(clock.Nanotime(c)))
	// Output:
	// waited 0s
	// waited 200ms
	// waited 200ms
	// burst of 5: true stored now: 0
}

func ExampleNewWarmingUp() {
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// 2 permits/s once warm; cold it is 3 times slower and takes 4 s of
	// saturated demand to warm up.
	l, err := tokenbucket.NewWarmingUp(2, 4*time.Second, tokenbucket.WithClock(c))
	if err != nil {
		panic(err)
	}
	for range 7 {
		waited, _ := l.Acquire(context.Background(), 1)
		fmt.Println("waited", waited)
	}
	// Output:
	// waited 0s
	// waited 1.375s
	// waited 1.125s
	// waited 875ms
	// waited 625ms
	// waited 500ms
	// waited 500ms
}

func ExampleLimiter_TryReserveAt() {
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, _ := tokenbucket.NewBursty(10, tokenbucket.WithClock(c))
	now := clock.Nanotime(c) // read once, passed down, as the flow engine does
	for range 3 {
		r, _ := l.TryReserveAt(now, 1, 0)
		fmt.Printf("ok=%v wait=%v\n", r.OK, r.Wait)
	}
	r, _ := l.TryReserveAt(now, 1, 150*time.Millisecond) // may wait up to 150ms
	fmt.Printf("ok=%v wait=%v\n", r.OK, r.Wait)
	l.Refund(now, 1) // a later check refused the call: give the permit back
	r, _ = l.TryReserveAt(now, 1, 0)
	fmt.Printf("ok=%v wait=%v\n", r.OK, r.Wait)
	// Output:
	// ok=true wait=0s
	// ok=false wait=100ms
	// ok=false wait=100ms
	// ok=true wait=100ms
	// ok=false wait=100ms
}
