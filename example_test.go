package flowgate_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// Example loads a rules document with a per-IP and a global limit on one
// resource. The most specific level is asked first, so the abusive client is
// refused at the ip level without using up the shared quota; the global
// limit then refuses everyone until its window ends.
func Example() {
	doc, err := rules.Parse([]byte(`{"rules": [
	  {"id": "api-per-ip", "resource": "GET /api", "level": "ip",
	   "algorithm": "fixed_window", "limit": 2, "window": "1m"},
	  {"id": "api-global", "resource": "GET /api",
	   "algorithm": "fixed_window", "limit": 4, "window": "1m"}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	clk := clock.NewFake(time.Unix(0, 0))
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules(doc.Rules()); err != nil {
		fmt.Println(err)
		return
	}
	call := func(ip string) {
		p, err := eng.Entry("GET /api", flow.WithIP(ip))
		var be *flow.BlockError
		if errors.As(err, &be) {
			fmt.Printf("%s: blocked by %s (%s level), retry after %v\n", ip, be.RuleID, be.Level, be.RetryAfter)
			return
		}
		fmt.Printf("%s: passed\n", ip)
		p.Exit()
	}
	for _, ip := range []string{"10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2", "10.0.0.3"} {
		call(ip)
	}
	clk.Advance(time.Minute)
	call("10.0.0.3")
	// Output:
	// 10.0.0.1: passed
	// 10.0.0.1: passed
	// 10.0.0.1: blocked by api-per-ip (ip level), retry after 1m0s
	// 10.0.0.2: passed
	// 10.0.0.2: passed
	// 10.0.0.3: blocked by api-global (global level), retry after 1m0s
	// 10.0.0.3: passed
}
