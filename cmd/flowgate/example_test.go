package main

import (
	"fmt"
	"os"
	"strings"
)

func Example_validate() {
	doc := `{"rules": [
	  {"id": "orders", "resource": "GET /orders", "algorithm": "token_bucket", "limit": 0, "window": "10x"}
	]}`
	code := run([]string{"validate", "-"}, strings.NewReader(doc), os.Stdout, os.Stdout)
	fmt.Println("exit", code)
	// Output:
	// -: rules[0] (id "orders"): window: "10x": unknown unit "x" (valid: ns, us, ms, s, m, h)
	// -: rules[0] (id "orders"): limit: must be > 0, not 0
	// exit 1
}

func Example_fmt() {
	doc := `{"rules": [{"limit": 5, "algorithm": "fixed_window", "resource": "api", "level": "ip"}]}`
	run([]string{"fmt", "-"}, strings.NewReader(doc), os.Stdout, os.Stdout)
	// Output:
	// {
	//   "rules": [
	//     {
	//       "resource": "api",
	//       "level": "ip",
	//       "algorithm": "fixed_window",
	//       "limit": 5,
	//       "window": "1s",
	//       "maxWait": "0s",
	//       "maxKeys": 100000,
	//       "idleTTL": "10m",
	//       "adaptive": false
	//     }
	//   ]
	// }
}
