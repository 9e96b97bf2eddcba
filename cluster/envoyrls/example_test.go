package envoyrls_test

import (
	"context"
	"fmt"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/cluster/envoyrls"
)

// A config in envoyproxy/ratelimit's YAML, a service deciding with it, and
// Envoy's question asked three times within one minute.
func Example() {
	cfg, err := envoyrls.Parse(envoyrls.File{Name: "edge.yaml", Data: []byte(`
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC))
	svc := envoyrls.NewService(envoyrls.WithClock(clk)) // counters in this process
	if err := svc.Load(cfg); err != nil {
		fmt.Println(err)
		return
	}
	req := &rlspb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.1.2.3"}}},
	}}
	for range 3 {
		resp, err := svc.ShouldRateLimit(context.Background(), req)
		if err != nil {
			fmt.Println(err)
			return
		}
		st := resp.Statuses[0]
		fmt.Println(resp.OverallCode, st.LimitRemaining, st.DurationUntilReset.AsDuration())
	}
	// Output:
	// OK 1 30s
	// OK 0 30s
	// OVER_LIMIT 0 30s
}

// A bad file is refused with its path and where the problem is.
func ExampleParse() {
	_, err := envoyrls.Parse(envoyrls.File{Name: "conf/edge.yaml", Data: []byte(`
domain: edge
descriptors:
  - key: path
    rate_limit: {unit: fortnight, requests_per_unit: 5}
`)})
	fmt.Println(err)
	// Output:
	// conf/edge.yaml: edge.descriptors[0].rate_limit: unit: "fortnight" is not one of second, minute, hour, day, week, month, year
}
