package cluster

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/internal/clustertest"
	"github.com/redis/go-redis/v9"
)

// backend gives each engine of a test its own client to one Redis (a
// single server or a cluster), as separate instances would have.
type backend struct {
	name   string
	client func(t *testing.T) redis.UniversalClient
}

// newServer returns a token server on rdb, closed at the end of the test.
// Its timeout is a generous 2s unless opts say otherwise: correctness, not
// latency, is under test, and a slow run (-race, shared cores) must not
// fall back.
func newServer(t *testing.T, rdb redis.UniversalClient, opts ...Option) *RedisTokenServer {
	t.Helper()
	ts, err := NewRedisTokenServer(rdb, append([]Option{WithTimeout(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts
}

// The shared helpers (cluster/internal/clustertest), under the names these
// tests have always used.
var (
	newEngine       = clustertest.NewEngine
	crule           = clustertest.Rule
	uniq            = clustertest.Uniq
	redisNow        = clustertest.RedisNow
	waitWindowStart = clustertest.WaitWindowStart
	t0              = clustertest.T0
	hammer          = clustertest.Hammer
	hammerFor       = clustertest.HammerFor
	coldBound       = clustertest.ColdBound
)
