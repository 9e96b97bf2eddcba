package cluster_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/flow"
	"github.com/redis/go-redis/v9"
)

// A rule with a cluster block is decided in Redis for every instance.
// Here Redis is unreachable, so each rule's fallback decides: "local"
// enforces Limit/instances here, "deny" refuses, "allow" admits.
func ExampleNewRedisTokenServer() {
	// go-redis defaults are fine: the server derives its own client with
	// a bounded dial, the timeout on the socket and no re-sent commands.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // nothing listens here
	defer rdb.Close()
	ts, err := cluster.NewRedisTokenServer(rdb, cluster.WithPrefix("shop:"), cluster.WithTimeout(20*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer ts.Close()

	eng := flow.NewEngine(flow.WithTokenServer(ts))
	rule := func(res, fallback string) flow.Rule {
		return flow.Rule{ID: res, Resource: res, Algorithm: flow.AlgoFixedWindow, Limit: 2, Window: time.Minute,
			Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: fallback}}
	}
	if err := eng.LoadRules([]flow.Rule{rule("orders", "local"), rule("admin", "deny"), rule("health", "allow")}); err != nil {
		panic(err)
	}
	for _, res := range []string{"orders", "orders", "orders", "admin", "health"} {
		p, err := eng.Entry(res)
		var be *flow.BlockError
		if errors.As(err, &be) {
			fmt.Printf("%s: blocked (%s)\n", res, be.Reason)
			continue
		}
		p.Exit()
		fmt.Printf("%s: passed\n", res)
	}
	fmt.Println("fallbacks:", eng.Snapshot().Cluster.Fallbacks)
	// Output:
	// orders: passed
	// orders: passed
	// orders: blocked (rate limited)
	// admin: blocked (cluster unavailable)
	// health: passed
	// fallbacks: map[allow:1 deny:1 local:3]
}

// Leasing takes permits in batches for hot keys: one round trip per batch
// instead of one per call, for a bounded over-admission (see LeaseConfig).
func ExampleWithLeasing() {
	opt := cluster.WithLeasing(cluster.LeaseConfig{Period: 100 * time.Millisecond, MaxBatch: 64})
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	ts, err := cluster.NewRedisTokenServer(rdb, opt)
	if err != nil {
		panic(err)
	}
	defer ts.Close() // gives unspent leased permits back
	fmt.Println("instances:", ts.Instances(), "breaker open:", ts.BreakerOpen())
	// Output:
	// instances: 1 breaker open: false
}
