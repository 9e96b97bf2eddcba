// Command cluster shows flowgate's token service end to end: a Redis, two
// `flowgate serve` replicas in front of it, and three service instances
// whose engines share one global limit through the replicas. A quarter
// of the way through, one replica is stopped: the clients fail over to the other and
// the limit still holds. It prints what each instance admitted and the
// total: the limit exactly when the callers asked for more than it (less
// only by calls whose answer was lost with the stopped replica).
//
// It needs redis-server on PATH; without it, it says so and exits 0 (1 when
// FLOWGATE_REQUIRE_REDIS=1, as make test sets it).
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/cluster/remote"
	"github.com/flowgate/flowgate/cluster/tokenrpc"
	"github.com/flowgate/flowgate/flow"
	"github.com/redis/go-redis/v9"
)

// The shared limit: 2000 calls per minute across every instance (a
// sliding log is exact over any minute; the run is far shorter).
var limit = flow.Rule{ID: "orders-global", Resource: "GET /orders", Algorithm: flow.AlgoSlidingLog,
	Limit: 2000, Window: time.Minute, Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "deny"}}

func main() {
	os.Exit(run(context.Background(), os.Stdout, 2*time.Second))
}

func run(ctx context.Context, out io.Writer, d time.Duration) int {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("FLOWGATE_REQUIRE_REDIS") == "1" { // make test: missing is a failure, not a skip
			fmt.Fprintln(out, "redis-server is not on PATH, and FLOWGATE_REQUIRE_REDIS=1")
			return 1
		}
		fmt.Fprintln(out, "redis-server is not on PATH: skipping the cluster example")
		return 0
	}
	rds, err := startRedis(ctx, bin)
	if err != nil {
		fmt.Fprintln(out, "redis:", err)
		return 1
	}
	defer rds.stop()
	fmt.Fprintf(out, "redis-server on %s\n", rds.addr)

	// Two replicas, each with its own Redis connection pool, as two
	// `flowgate serve` processes would have.
	var replicas []*replica
	for _, name := range []string{"A", "B"} {
		r, err := startReplica(name, rds.addr)
		if err != nil {
			fmt.Fprintln(out, "replica:", err)
			return 1
		}
		defer r.stop()
		replicas = append(replicas, r)
		fmt.Fprintf(out, "replica %s serving on %s\n", name, r.addr)
	}
	insts, err := newInstances(3, []string{replicas[0].addr, replicas[1].addr})
	if err != nil {
		fmt.Fprintln(out, err)
		return 1
	}
	defer func() {
		for _, in := range insts {
			in.client.Close()
		}
	}()
	fmt.Fprintf(out, "3 instances x 4 callers for %v against %q: %v per %v, global\n", d, limit.Resource, limit.Limit, limit.Window)

	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for _, in := range insts {
		for range 4 {
			wg.Go(func() { in.call(ctx, end) })
		}
	}
	time.Sleep(d / 4)
	replicas[1].stop()
	fmt.Fprintln(out, "replica B stopped; clients carry on through replica A")
	wg.Wait()
	return report(out, insts)
}

// report prints what each instance admitted and refused, and returns 1
// when they admitted more than the global limit in all.
func report(out io.Writer, insts []*instance) int {
	total := int64(0)
	for _, in := range insts {
		fb := in.eng.Snapshot().Cluster.Fallbacks["deny"]
		fmt.Fprintf(out, "%s: admitted %4d, refused %5d (of which %d by the fallback while failing over)\n",
			in.name, in.passed.Load(), in.refused.Load(), fb)
		total += in.passed.Load()
	}
	fmt.Fprintf(out, "admitted in all: %d (limit %v)\n", total, limit.Limit)
	if total > int64(limit.Limit) {
		fmt.Fprintln(out, "the global limit was exceeded")
		return 1
	}
	return 0
}

// instance is one application instance: an engine deciding the cluster
// rule through its own client of both replicas.
type instance struct {
	name            string
	eng             *flow.Engine
	passed, refused atomic.Int64
	client          *remote.TokenServer
}

// newInstances makes n instances, each with a client of the replicas at
// addrs; the caller closes their clients.
func newInstances(n int, addrs []string) (insts []*instance, err error) {
	defer func() {
		if err != nil {
			for _, in := range insts {
				in.client.Close()
			}
		}
	}()
	for i := range n {
		c, cerr := remote.New(addrs, remote.WithTimeout(200*time.Millisecond), remote.WithInstances(n))
		if cerr != nil {
			return insts, fmt.Errorf("client: %w", cerr)
		}
		in := &instance{name: "instance-" + strconv.Itoa(i+1), eng: flow.NewEngine(flow.WithTokenServer(c)), client: c}
		insts = append(insts, in)
		if lerr := in.eng.LoadRules([]flow.Rule{limit}); lerr != nil {
			return insts, fmt.Errorf("rules: %w", lerr)
		}
	}
	return insts, nil
}

// call enters the limited resource over and over until end or ctx ends,
// counting what was admitted and refused.
func (in *instance) call(ctx context.Context, end time.Time) {
	for time.Now().Before(end) && ctx.Err() == nil {
		p, err := in.eng.Entry(limit.Resource)
		if err != nil {
			in.refused.Add(1)
			time.Sleep(time.Millisecond) // a refused caller backs off a little
			continue
		}
		in.passed.Add(1)
		p.Exit()
	}
}

// replica is one in-process token service.
type replica struct {
	addr     string
	rdb      *redis.Client
	ts       *cluster.RedisTokenServer
	srv      *tokenrpc.Server
	served   chan error
	stopOnce sync.Once
}

func startReplica(name, redisAddr string) (*replica, error) {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	ts, err := cluster.NewRedisTokenServer(rdb, cluster.WithInstanceID("replica-"+name), cluster.WithTimeout(200*time.Millisecond))
	if err != nil {
		rdb.Close()
		return nil, err
	}
	srv, err := tokenrpc.NewServer(ts, nil)
	if err != nil {
		ts.Close()
		rdb.Close()
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ts.Close()
		rdb.Close()
		return nil, err
	}
	r := &replica{addr: lis.Addr().String(), rdb: rdb, ts: ts, srv: srv, served: make(chan error, 1)}
	go func() { r.served <- srv.Serve(lis) }()
	return r, nil
}

// stop drains the replica's calls (1s at most) and closes it; again, it
// does nothing.
func (r *replica) stop() {
	r.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r.srv.Shutdown(ctx)
		<-r.served
		r.ts.Close()
		r.rdb.Close()
	})
}
