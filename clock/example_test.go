package clock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/clock"
)

func ExampleFake() {
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	_ = c.Sleep(context.Background(), 5*time.Second) // returns at once
	c.Advance(time.Minute)
	fmt.Println(c.Now().Format(time.TimeOnly))
	// Output: 00:01:05
}
