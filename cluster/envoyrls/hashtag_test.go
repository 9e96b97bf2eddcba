package envoyrls

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/internal/testing/redistest"
)

const fiveYAML = `
domain: edge
descriptors:
  - {key: k0, rate_limit: {unit: minute, requests_per_unit: 100}}
  - {key: k1, rate_limit: {unit: minute, requests_per_unit: 100}}
  - {key: k2, rate_limit: {unit: minute, requests_per_unit: 100}}
  - {key: k3, rate_limit: {unit: minute, requests_per_unit: 100}}
  - {key: k4, rate_limit: {unit: minute, requests_per_unit: 100}}
`

// pipelineCounter counts the pipelines sent to the nodes of a cluster
// client: one per node a pipeline reaches, each one round trip.
type pipelineCounter struct{ n atomic.Int64 }

func (*pipelineCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (p *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		p.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestRedisClusterDomainHashTag: on a 3-master Redis Cluster, a request
// of 5 descriptors costs one round trip per node holding one of its
// counters; with the domain in a hash tag, one round trip in all.
func TestRedisClusterDomainHashTag(t *testing.T) {
	c := redistest.StartCluster(t)
	var pc pipelineCounter
	opts := c.ClusterOptions()
	opts.NewClient = func(o *redis.Options) *redis.Client {
		cl := redis.NewClient(o)
		cl.AddHook(&pc)
		return cl
	}
	rdb := c.NewClient(opts)
	var ds []*rlv3.RateLimitDescriptor
	for _, k := range []string{"k0", "k1", "k2", "k3", "k4"} {
		ds = append(ds, desc(k, "v"))
	}
	for _, tagged := range []bool{false, true} {
		opts := []Option{WithStore(redisStore(t, rdb))}
		if tagged {
			opts = append(opts, WithDomainHashTag())
		}
		h := newHarness(t, fiveYAML, opts...)
		nodes := map[string]bool{}
		for _, k := range []string{"k0", "k1", "k2", "k3", "k4"} {
			key := "edge_" + k + "_v_" + itoa(t0.Unix())
			if tagged {
				key = "{edge}_" + k + "_v_" + itoa(t0.Unix())
			}
			nodes[c.NodeFor(key).Addr] = true
		}
		h.ask(t, "edge", 0, ds...) // the client learns the slots
		const n = 200
		before := pc.n.Load()
		start := time.Now()
		for range n {
			for _, st := range h.ask(t, "edge", 0, ds...).Statuses {
				if st.Code != ok && st.Code != over {
					t.Fatalf("status %v", st)
				}
			}
		}
		took := time.Since(start)
		trips := float64(pc.n.Load()-before) / n
		t.Logf("hash tag %v: counters on %d node(s), %.2f round trips per request, %v per request (5 descriptors)", tagged, len(nodes), trips, took/n)
		want := float64(len(nodes))
		if tagged {
			want = 1
		}
		if trips != want || (tagged && len(nodes) != 1) || (!tagged && len(nodes) < 2) {
			t.Errorf("hash tag %v: %.2f round trips per request over %d node(s), want %v", tagged, trips, len(nodes), want)
		}
		if got := rdb.Get(context.Background(), "{edge}_k0_v_"+itoa(t0.Unix())).Val(); tagged && got != "201" {
			t.Errorf("tagged counter holds %q, want 201", got)
		}
	}
}
