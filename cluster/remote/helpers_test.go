package remote

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/cluster/internal/clustertest"
	"github.com/flowgate/flowgate/cluster/tokenrpc"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

// remoteReplicaT is one in-process `flowgate serve` replica on loopback.
type remoteReplicaT struct {
	srv  *tokenrpc.Server
	addr string
	done chan error
}

// startRemoteReplica serves ts on a free loopback port until the test ends.
func startRemoteReplica(t *testing.T, ts flow.TokenServer, opts ...tokenrpc.Option) *remoteReplicaT {
	t.Helper()
	srv, err := tokenrpc.NewServer(ts, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &remoteReplicaT{srv: srv, addr: lis.Addr().String(), done: make(chan error, 1)}
	go func() { r.done <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-r.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return r
}

// startRemoteReplicaB is startRemoteReplica for a benchmark; it returns
// the address.
func startRemoteReplicaB(b *testing.B, ts flow.TokenServer) string {
	b.Helper()
	srv, err := tokenrpc.NewServer(ts, nil, tokenrpc.WithMaxQPS(0))
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	b.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return lis.Addr().String()
}

// redisReplicas starts n replicas, each with its own Redis client and
// RedisTokenServer on srv, as separate serve processes would have.
func redisReplicas(t *testing.T, srv *redistest.Server, n int, opts ...cluster.Option) ([]*remoteReplicaT, []string) {
	t.Helper()
	var reps []*remoteReplicaT
	var addrs []string
	for range n {
		// No go-redis retries: a dead Redis should fail at once, as the
		// tests of it expect.
		o := srv.ClientOptions()
		o.MaxRetries = -1
		ts := newServer(t, srv.NewClient(o), append([]cluster.Option{cluster.WithTimeout(time.Second)}, opts...)...)
		r := startRemoteReplica(t, ts)
		reps = append(reps, r)
		addrs = append(addrs, r.addr)
	}
	return reps, addrs
}

// newServer returns an embedded Redis token server on rdb, closed at the
// end of the test, with a generous 2s timeout unless opts say otherwise.
func newServer(t *testing.T, rdb redis.UniversalClient, opts ...cluster.Option) *cluster.RedisTokenServer {
	t.Helper()
	ts, err := cluster.NewRedisTokenServer(rdb, append([]cluster.Option{cluster.WithTimeout(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts
}

// newRemote returns a client of addrs, closed at the end of the test.
func newRemote(t *testing.T, addrs []string, opts ...Option) *TokenServer {
	t.Helper()
	c, err := New(addrs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// remoteEngines returns n engines, each with its own client of addrs.
// The timeout is generous: these tests check decisions, not latency, and
// run under -race on shared cores.
func remoteEngines(t *testing.T, addrs []string, n int, rules ...flow.Rule) ([]*flow.Engine, []*TokenServer) {
	t.Helper()
	var es []*flow.Engine
	var cs []*TokenServer
	for i := range n {
		c := newRemote(t, addrs, WithTimeout(2*time.Second))
		cs = append(cs, c)
		es = append(es, newEngine(t, logErrors{c, t, new(atomic.Int32)}, t0.Add(time.Duration(i)*7*time.Second), rules...))
	}
	return es, cs
}

// logErrors logs a client's first failed calls: the engine turns them into
// a bare "cluster unavailable", and a failing test should say why.
type logErrors struct {
	*TokenServer
	t *testing.T
	n *atomic.Int32
}

func (l logErrors) Acquire(ctx context.Context, req flow.TokenRequest) (flow.TokenResult, error) {
	res, err := l.TokenServer.Acquire(ctx, req)
	if err != nil && l.n.Add(1) <= 3 {
		l.t.Logf("remote Acquire %s: %v", req.Resource, err)
	}
	return res, err
}

// The helpers shared with the Redis token server's tests.
var (
	newEngine       = clustertest.NewEngine
	crule           = clustertest.Rule
	uniq            = clustertest.Uniq
	waitWindowStart = clustertest.WaitWindowStart
	t0              = clustertest.T0
	redisNow        = clustertest.RedisNow
	hammer          = clustertest.Hammer
	hammerFor       = clustertest.HammerFor
	coldBound       = clustertest.ColdBound
)
