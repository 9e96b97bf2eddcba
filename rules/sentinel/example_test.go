package sentinel_test

import (
	"fmt"

	"github.com/flowgate/flowgate/rules/sentinel"
)

// A sentinel-golang isolation rule and a Java throttling flow rule become
// one flowgate document.
func ExampleImport() {
	res, err := sentinel.Import([]sentinel.File{
		{Name: "isolation.json", Data: []byte(`[{"resource":"abc","metricType":0,"threshold":12}]`)},
		{Name: "flow.json", Data: []byte(`[{"resource":"POST /pay","grade":1,"count":5,"controlBehavior":2,"maxQueueingTimeMs":500}]`)},
	}, sentinel.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res.Reports {
		fmt.Println(r)
	}
	for _, r := range res.Document.Rules() {
		fmt.Println(r.ID, r.Algorithm, r.Limit, r.MaxWait)
	}
	// Output:
	// isolation.json[0] go isolation "abc": exact -> sentinel-isolation/abc
	// flow.json[0] java flow "POST /pay": exact -> sentinel-flow/POST /pay
	// sentinel-isolation/abc concurrency 12 0s
	// sentinel-flow/POST /pay leaky_bucket 5 500ms
}
