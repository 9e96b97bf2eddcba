package envoyrls

import (
	"context"
	"fmt"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/internal/testing/judge"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

func TestRedisStoreFixedWindow(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	defer rdb.Close()
	h := newHarness(t, serviceYAML, WithStore(redisStore(t, rdb)), WithKeyPrefix("t:"))
	h.clk.Advance(20 * time.Second)
	want := []brief{{ok, 3, 1}, {ok, 3, 0}, {over, 3, 0}, {over, 3, 0}}
	hits := []uint64{2, 1, 1, 1}
	for i, w := range want {
		r := h.ask(t, "web", 0, withHits(desc("client", "a"), hits[i]), desc("path", "p"))
		if got := briefOf(r.Statuses[0]); got != w {
			t.Fatalf("call %d: got %+v, want %+v", i, got, w)
		}
	}
	// The counter is envoyproxy/ratelimit's key, living a unit.
	key := "t:web_client_a_" + itoa(t0.Unix()+20-(t0.Unix()+20)%60)
	n, err := rdb.Get(context.Background(), key).Int()
	if err != nil || n != 5 {
		t.Fatalf("GET %s = %d, %v; want 5 (every hit counted)", key, n, err)
	}
	if ttl := rdb.TTL(context.Background(), key).Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL %v, want within a minute", ttl)
	}
	// Two replicas over one Redis share the counters.
	h2 := newHarness(t, serviceYAML, WithStore(redisStore(t, rdb)), WithKeyPrefix("t:"))
	h2.clk.Set(h.clk.Now())
	if got := briefOf(h2.ask(t, "web", 0, desc("client", "a")).Statuses[0]); got != (brief{over, 3, 0}) {
		t.Errorf("second replica: got %+v, want over", got)
	}
}

func TestRedisDownAnswersUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	defer rdb.Close()
	h := newHarness(t, serviceYAML, WithStore(redisStore(t, rdb)))
	h.ask(t, "web", 0, desc("client", "a"))
	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := h.client.ShouldRateLimit(ctx, &rlspb.RateLimitRequest{Domain: "web", Descriptors: []*rlv3.RateLimitDescriptor{desc("client", "a")}})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("Redis down: got %v, want Unavailable (Envoy's failure_mode_deny decides)", err)
	}
	// A request with no counted descriptor needs no Redis.
	if r := h.ask(t, "web", 0, desc("open", "x"), desc("unknown", "y")); r.OverallCode != ok {
		t.Errorf("nothing to count: got %v", r.OverallCode)
	}
	if h.svc.Stats().Errors != 1 {
		t.Errorf("errors = %d, want 1", h.svc.Stats().Errors)
	}
}

// TestRedisAlgorithmSharedByReplicas: an algorithm descriptor decided by
// the cluster token server holds one limit across two service replicas.
// A call the token server could not answer in its 20 ms (a loaded
// machine) is decided by the local fallback, which may admit one more: such
// a try is not judged and is run again on an emptied Redis.
func TestRedisAlgorithmSharedByReplicas(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	defer rdb.Close()
	judge.Retry(t, 3, func(int) error {
		if err := rdb.FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		ts, err := cluster.NewRedisTokenServer(rdb)
		if err != nil {
			t.Fatal(err)
		}
		defer ts.Close()
		a := newHarness(t, algoYAML, WithStore(redisStore(t, rdb)), WithTokenServer(ts))
		b := newHarness(t, algoYAML, WithStore(redisStore(t, rdb)), WithTokenServer(ts))
		got := a.admitted(t, 6, "sliding") + b.admitted(t, 6, "sliding")
		if n := rdb.Keys(context.Background(), "flowgate:*").Val(); len(n) == 0 {
			t.Errorf("no token-server key in Redis: the decision was not shared")
		}
		if got == 10 {
			return nil
		}
		err = fmt.Errorf("two replicas admitted %d under a sliding window of 10 per minute, want 10", got)
		if st := ts.Stats(); st.Errors > 0 {
			return fmt.Errorf("%w (%d calls fell back: %w)", err, st.Errors, judge.ErrUnjudged)
		}
		return err
	})
}

// TestRedisClusterStore: a request's counters spread over the nodes of a
// Redis Cluster are counted in one pipeline split per node.
func TestRedisClusterStore(t *testing.T) {
	c := redistest.StartCluster(t)
	rdb := c.Client()
	defer rdb.Close()
	h := newHarness(t, serviceYAML, WithStore(redisStore(t, rdb)))
	var ds []*rlv3.RateLimitDescriptor
	for i := range 12 {
		ds = append(ds, desc("client", itoa(int64(i))))
	}
	for call, want := range []brief{{ok, 3, 1}, {over, 3, 0}} {
		r := h.ask(t, "web", 2, ds...)
		for i, st := range r.Statuses {
			if got := briefOf(st); got != want {
				t.Fatalf("call %d descriptor %d: got %+v, want %+v", call, i, got, want)
			}
		}
	}
	nodes := map[string]bool{}
	for i := range 12 {
		key := "web_client_" + itoa(int64(i)) + "_" + itoa(t0.Unix())
		nodes[c.NodeFor(key).Addr] = true
		if n, err := rdb.Get(context.Background(), key).Int(); err != nil || n != 4 {
			t.Errorf("%s = %d, %v; want 4", key, n, err)
		}
	}
	if len(nodes) < 2 {
		t.Errorf("the 12 counters sat on %d node(s); the test wants them spread", len(nodes))
	}
}
