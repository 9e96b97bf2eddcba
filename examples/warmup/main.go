// Command warmup shows a cold Guava-style SmoothWarmingUp limiter ramping up.
//
// A steady stream of callers asks for one permit after another from a limiter
// of 20 permits/s with a 5 s warm-up. The limiter starts cold, serving permits
// coldFactor (3) times slower, and speeds up as the demand uses up its stored
// permits. The program prints the achieved rate per half second as a bar chart.
//
// Everything runs on virtual time (clock.Fake), whose Sleep moves the clock
// instead of waiting, so ten seconds of traffic take a few milliseconds.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/tokenbucket"
)

const (
	rate      = 20.0            // permits per second once warm
	period    = 5 * time.Second // warm-up period
	runFor    = 10 * time.Second
	bucket    = 500 * time.Millisecond
	perPermit = 2 // bar characters per permit/s
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "warmup demo:", err)
		os.Exit(1)
	}
}

func run() error {
	start := time.Now()
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, err := tokenbucket.NewWarmingUp(rate, period, tokenbucket.WithClock(c))
	if err != nil {
		return err
	}
	fmt.Printf("SmoothWarmingUp: %.0f permits/s when warm, %v warm-up, cold factor 3 (cold: %.1f permits/s)\n",
		rate, period, rate/3)
	fmt.Printf("Runs on virtual time (clock.Fake): %v of saturated demand, simulated in well under a second.\n\n", runFor)

	// Saturated demand: each caller asks as soon as the previous one got its
	// permit; Acquire sleeps on the fake clock, which moves it forward.
	var grants []time.Duration
	ctx := context.Background()
	for len(grants) == 0 || grants[len(grants)-1] < runFor {
		if _, err := l.Acquire(ctx, 1); err != nil {
			return err
		}
		grants = append(grants, time.Duration(clock.Nanotime(c)))
	}

	fmt.Println("  window        permits/s")
	warmAt := time.Duration(-1)
	for from := time.Duration(0); from < runFor; from += bucket {
		perSec := (permitsBy(grants, from+bucket) - permitsBy(grants, from)) / bucket.Seconds()
		fmt.Printf("  %4.1f-%4.1fs  %5.1f |%s\n", from.Seconds(), (from + bucket).Seconds(),
			perSec, strings.Repeat("#", int(perSec*perPermit+0.5)))
		if warmAt < 0 && perSec >= rate {
			warmAt = from
		}
	}
	fmt.Printf("  %17s +%s\n", "", strings.Repeat("-", int(rate*perPermit))+"| 20/s")
	if warmAt >= 0 {
		fmt.Printf("\nStable rate reached in the window starting at %.1fs.\n", warmAt.Seconds())
	}
	fmt.Printf("Real time taken: %.2f ms.\n", float64(time.Since(start))/float64(time.Millisecond))
	return nil
}

// permitsBy is how many permits were granted by t, counting the permit in
// progress pro rata (the straight line between two grants), so that a window
// shows the rate achieved in it rather than a whole count of 3 or 4 permits.
func permitsBy(grants []time.Duration, t time.Duration) float64 {
	for k := 0; k+1 < len(grants); k++ {
		if a, b := grants[k], grants[k+1]; t < b {
			if t < a {
				return 0
			}
			return float64(k+1) + float64(t-a)/float64(b-a)
		}
	}
	return float64(len(grants))
}
