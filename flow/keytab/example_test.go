package keytab_test

import (
	"fmt"
	"time"

	"github.com/flowgate/flowgate/flow/keytab"
)

// A table of request counters for at most two clients: a third client
// evicts the least recently used one, which comes back starting afresh.
func Example() {
	type counter struct{ n int }
	t := keytab.New[counter](2, time.Minute)
	count := func(client string, now time.Duration) int {
		c, _ := t.Get(client, int64(now), func(*counter) error { return nil })
		c.n++ // the caller synchronises the value: here one goroutine
		return c.n
	}
	fmt.Println(count("a", 0), count("b", 1), count("a", 2))
	fmt.Println(count("c", 3)) // evicts b
	fmt.Println(count("b", 4), t.Len())
	// Output:
	// 1 1 2
	// 1
	// 1 2
}
