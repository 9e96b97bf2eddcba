// Command quickstart is the README's quick start: one rule, seven calls in a
// row, the last one refused. It runs in a few milliseconds and needs nothing
// but Go.
//
//	go run ./examples/quickstart
package main

import (
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/flowgate/flowgate/flow"
)

func main() {
	// 5 calls a second to "GET /search". The bucket starts full (Burst
	// defaults to Limit), so calls 1-5 spend stored permits; call 6 passes
	// too, as in Guava, and its cost pushes call 7 back 200ms.
	err := flow.Default().LoadRules([]flow.Rule{
		{ID: "search", Resource: "GET /search", Algorithm: flow.AlgoTokenBucket, Limit: 5},
	})
	if err != nil {
		log.Fatal(err)
	}
	for i := 1; i <= 7; i++ {
		p, err := flow.Entry("GET /search")
		var be *flow.BlockError
		if errors.As(err, &be) { // errors.Is(err, flow.ErrBlocked) holds too
			fmt.Printf("call %d: blocked by rule %q at level %s, retry in ~%v\n",
				i, be.RuleID, be.Level, be.RetryAfter.Round(10*time.Millisecond))
			continue
		}
		fmt.Printf("call %d: passed\n", i)
		p.Exit() // in a handler: defer p.Exit()
	}
}
