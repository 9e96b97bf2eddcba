package algo_test

import (
	"fmt"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow/internal/algo"
)

// A fixed window of 3 per second on a fake clock: the fourth call at one
// instant is refused until the window ends.
func ExampleNew() {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	clk.Advance(250 * time.Millisecond)
	spec := algo.Spec{Kind: algo.FixedWindow, Limit: 3, Window: time.Second}
	l, err := algo.New(spec, spec.Limit, clk, clk.Nanotime())
	if err != nil {
		panic(err)
	}
	now := clk.Nanotime()
	for range 4 {
		d := l.TryAcquire(now, 1, 0)
		fmt.Printf("ok=%v remaining=%v retryAfter=%v\n", d.OK(), d.Remaining, d.Wait)
	}
	// Output:
	// ok=true remaining=2 retryAfter=0s
	// ok=true remaining=1 retryAfter=0s
	// ok=true remaining=0 retryAfter=0s
	// ok=false remaining=0 retryAfter=750ms
}
