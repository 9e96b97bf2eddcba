package hotpath_test

import (
	"fmt"

	"github.com/flowgate/flowgate/internal/hotpath"
)

// A statistics ring finds the bucket of a moment with a Divider instead of
// two hardware divisions.
func ExampleDivider() {
	bucketNs := hotpath.NewDivider(100_000_000) // 100ms buckets
	ring := hotpath.NewDivider(10)              // 10 of them
	now := uint64(1_234_567_890)                // ns
	epoch := bucketNs.Div(now)
	fmt.Println(epoch, ring.Mod(epoch))
	// Output: 12 2
}
