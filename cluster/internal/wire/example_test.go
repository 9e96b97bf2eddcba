package wire_test

import (
	"fmt"
	"time"

	"github.com/flowgate/flowgate/cluster/internal/wire"
	"github.com/flowgate/flowgate/flow"
)

// A rule crosses the wire and comes back with flow's defaults, validated.
func ExampleToRule() {
	r := flow.Rule{ID: "orders", Resource: "GET /orders", Level: flow.LevelUser, Algorithm: flow.AlgoSlidingWindow,
		Limit: 20, Window: time.Second, Cluster: &flow.ClusterSpec{}}
	back, err := wire.ToRule(wire.FromRule(&r))
	fmt.Println(back.ID, back.Level, back.Algorithm, back.Limit, back.Buckets, back.Cluster.Threshold, err)

	bad := wire.FromRule(&r)
	bad.Limit = -1
	_, err = wire.ToRule(bad)
	fmt.Println(err)
	// Output:
	// orders user sliding_window 20 10 global <nil>
	// limit: must be > 0, not -1
}
