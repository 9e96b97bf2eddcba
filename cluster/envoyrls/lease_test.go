package envoyrls

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

const leaseYAML = `
domain: api
descriptors:
  - key: hot
    rate_limit: {unit: hour, requests_per_unit: 200, algorithm: sliding_window, lease: {period: 1s, max_batch: 16}}
  - key: plain
    rate_limit: {unit: hour, requests_per_unit: 200, lease: {}}
  - key: cold
    rate_limit: {unit: hour, requests_per_unit: 200, algorithm: sliding_window}
`

func TestLeaseConfig(t *testing.T) {
	c := mustParse(t, leaseYAML)
	rules := c.algoRules(true, true)
	if got := rules[Lease{Period: time.Second, MaxBatch: 16}]; len(got) != 1 || got[0].ID != "api.hot" {
		t.Errorf("lease {1s, 16}: rules %+v, want api.hot", got)
	}
	plain := rules[Lease{Period: 100 * time.Millisecond, MaxBatch: 64}]
	if len(plain) != 1 || plain[0].Algorithm != flow.AlgoFixedWindow || plain[0].Window != time.Hour {
		t.Errorf("a leased plain descriptor: rules %+v, want one fixed_window of an hour (defaults 100ms, 64)", plain)
	}
	if got := rules[Lease{}]; len(got) != 1 || got[0].ID != "api.cold" {
		t.Errorf("unleased: %+v, want api.cold", got)
	}
	if got := c.algoRules(true, false); len(got) != 1 || len(got[Lease{}]) != 3 {
		t.Errorf("leasing off: %v, want every rule unleased", got)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"{unit: second, requests_per_unit: 5, lease: {period: 1s}}", "period: 1s is not shorter than the unit"},
		{"{unit: minute, requests_per_unit: 5, lease: {period: soon}}", `period: "soon"`},
		{"{unit: minute, requests_per_unit: 5, lease: {max_batch: -1}}", "max_batch: -1"},
		{"{unit: minute, requests_per_unit: 5, algorithm: leaky_bucket, lease: {}}", "never leased"},
		{"{unit: minute, requests_per_unit: 5, lease: {every: 1s}}", `unknown key "every"`},
	} {
		_, err := Parse(File{Name: "f.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: " + bad.yaml + "\n")})
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "f.yaml") {
			t.Errorf("%s: got %v, want an error with %q and the file", bad.yaml, err, bad.want)
		}
	}
}

// leasedReplica is a service replica over rdb whose leased descriptors
// are decided by leasing token servers it builds, as serve does.
func leasedReplica(t *testing.T, rdb *redis.Client) (*harness, *[]*cluster.RedisTokenServer) {
	t.Helper()
	// Redis calls bounded at 2s: on a loaded machine the default 20ms is
	// missed at times, and a decision then falls back to the process.
	main, err := cluster.NewRedisTokenServer(rdb, cluster.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var leased []*cluster.RedisTokenServer
	t.Cleanup(func() {
		for _, ts := range leased {
			ts.Close()
		}
		main.Close()
	})
	build := func(ls Lease) (flow.TokenServer, error) {
		ts, err := cluster.NewRedisTokenServer(rdb, cluster.WithTimeout(2*time.Second),
			cluster.WithLeasing(cluster.LeaseConfig{Period: ls.Period, MaxBatch: ls.MaxBatch}))
		if err == nil {
			leased = append(leased, ts)
		}
		return ts, err
	}
	return newHarness(t, leaseYAML, WithStore(redisStore(t, rdb)), WithTokenServer(main), WithLeasing(build)), &leased
}

// TestLeasedDescriptorsHoldTheLimit: two replicas leasing a hot
// descriptor admit no more than its limit between them, and most calls
// are decided from a lease without Redis. The windows are Redis's (an
// hour): a run that crosses an hour is tried again.
func TestLeasedDescriptorsHoldTheLimit(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	defer rdb.Close()
	for try := 0; ; try++ {
		rdb.FlushAll(context.Background())
		start := rdb.Time(context.Background()).Val()
		a, la := leasedReplica(t, rdb)
		b, lb := leasedReplica(t, rdb)
		got := map[string]int{}
		for _, key := range []string{"hot", "plain"} {
			got[key] = a.admitted(t, 150, key) + b.admitted(t, 150, key)
		}
		end := rdb.Time(context.Background()).Val()
		if start.Truncate(time.Hour) != end.Truncate(time.Hour) && try < 2 {
			continue // the run crossed a window edge
		}
		var local, fetches uint64
		for _, ts := range append(*la, *lb...) {
			local += ts.Stats().LeaseLocal
			fetches += ts.Stats().LeaseFetches
		}
		t.Logf("admitted %v of 300 each (limit 200); %d decisions from leases, %d batches", got, local, fetches)
		for key, n := range got {
			// Near the limit batches shrink to one: what one replica
			// holds unspent is at most a quarter of what was left.
			if n > 200 || n < 150 {
				t.Errorf("%s: two leasing replicas admitted %d of 300 under 200 per hour, want 150..200", key, n)
			}
		}
		if len(*la) != 2 || len(*lb) != 2 {
			t.Errorf("leasing servers built: %d and %d, want 2 each (one per distinct lease)", len(*la), len(*lb))
		}
		if fetches == 0 || local < 2*fetches {
			t.Errorf("%d local decisions for %d batches: the descriptors were not leased", local, fetches)
		}
		return
	}
}
