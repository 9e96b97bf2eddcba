package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster"
	"github.com/flowgate/flowgate/cluster/internal/clustertest"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/judge"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"google.golang.org/grpc/connectivity"
)

// TestRemoteReplicaKilled: one of two replicas dies while three clients
// hammer a global limit. The limit still holds (nothing is replayed), the
// only calls lost are those in flight on the dead replica (they take the
// rule's fallback), and every client decides again through the other
// replica within its timeout.
func TestRemoteReplicaKilled(t *testing.T) {
	srv := redistest.Start(t)
	reps, addrs := redisReplicas(t, srv, 2)
	rdb := srv.Client()
	res := uniq("remote-kill")
	r := crule("r", res, flow.AlgoFixedWindow, 600, time.Hour) // fallback deny
	es, cs := remoteEngines(t, addrs, 3, r)
	for _, c := range cs {
		// Both connections up before the run: a client still dialing the
		// live replica when the other dies would wait for it on the
		// calls' time, which on loaded cores is not what is under test.
		waitReady(t, c)
	}
	waitWindowStart(t, rdb, time.Hour, 10*time.Second)

	var once sync.Once
	var n sync.WaitGroup
	n.Add(1)
	var mu sync.Mutex
	count := 0
	hold := func() {
		mu.Lock()
		count++
		c := count
		mu.Unlock()
		if c == 200 {
			once.Do(func() { go func() { reps[0].srv.Stop(); n.Done() }() })
		}
	}
	const goroutines = 6
	passed, refused := clustertest.HammerThroughOutage(t, es, goroutines, res, func(i int) bool { return i >= 80 }, hold) // 1440 calls
	n.Wait()
	var fallbacks uint64
	for _, e := range es {
		fallbacks += e.Snapshot().Cluster.Fallbacks["deny"]
	}
	c, err := rdb.HGet(context.Background(), "flowgate:{"+res+"|global|}:r", "c").Int()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("passed %d, refused %d (fallback deny %d), counted in Redis %d", passed, refused, fallbacks, c)
	// Redis counted every admitted call and maybe some whose answer was
	// lost with the replica; never more than the limit.
	if passed > 600 || c != 600 || int64(c)-passed > int64(fallbacks) {
		t.Fatalf("passed %d, Redis count %d, fallbacks %d: want passed <= count = 600 and count-passed <= fallbacks", passed, c, fallbacks)
	}
	if max := uint64(len(es) * (goroutines + 1)); fallbacks > max {
		t.Fatalf("%d calls fell back, want at most the calls in flight on the dead replica (%d)", fallbacks, max)
	}
}

// TestRemoteFailoverWithinTimeout: clients that prefer a replica that
// dies decide through the other one, each within its per-call timeout.
// The replicas and Redis share the machine with the test: a try in which
// the process itself ran late enough to explain a miss is run again on a
// fresh pair of replicas (see failoverTry).
func TestRemoteFailoverWithinTimeout(t *testing.T) {
	srv := redistest.Start(t)
	judge.Retry(t, 3, func(int) error { return failoverTry(t, srv) })
}

// failoverTry kills the preferred one of two fresh replicas under three
// clients, then times each client's own calls from its first call after
// the kill: at most one fails, and it fails by the timeout at the latest
// (not after a second one, or a reconnect backoff of a second); the next
// is decided by the live replica, itself under the timeout. So a client
// is deciding again within two timeouts of asking, whatever the load (the
// clients run one after the other). A bound missed by no more than the
// process's own lateness meanwhile is the machine's load
// (judge.ErrUnjudged), and so is a second failed call on the live replica
// (its timeout, or its own Redis call's) while the process itself ran at
// least timeout/20 late: a quiet machine wakes it well under a
// millisecond late.
func failoverTry(t *testing.T, srv *redistest.Server) error {
	reps, addrs := redisReplicas(t, srv, 2)
	const timeout = 100 * time.Millisecond
	req := flow.TokenRequest{Resource: uniq("remote-failover"), Tokens: 1, Factor: 1}
	rule := crule("r", req.Resource, flow.AlgoFixedWindow, 1e6, time.Hour)
	req.Rules = []*flow.Rule{&rule}
	var cs []*TokenServer
	for i := range 3 {
		c := newRemote(t, addrs, WithTimeout(timeout))
		waitReady(t, c) // both connections up: a first dial under load may take longer than the timeout
		c.pref.Store(0)
		cs = append(cs, c)
		t.Logf("client %d ready", i)
	}
	m := judge.Start(time.Millisecond)
	defer m.Stop()
	reps[0].srv.Stop()
	var slowest time.Duration
	for i, c := range cs {
		fails := 0
		start := time.Now()
		for {
			call := time.Now()
			_, err := c.Acquire(context.Background(), req)
			if err == nil {
				break
			}
			if !errors.Is(err, flow.ErrTokenServerUnavailable) {
				t.Fatalf("client %d: %v, want an unavailable error or a decision", i, err)
			}
			if fails++; fails > 1 {
				// Every error of the client names the replica it asked.
				if strings.Contains(err.Error(), addrs[1]) && m.Lateness() >= timeout/20 {
					return fmt.Errorf("client %d: the live replica failed a call while the process woke up to %v late: %v: %w", i, m.Lateness(), err, judge.ErrUnjudged)
				}
				return fmt.Errorf("client %d: %d failed calls after the kill (the live replica is %s; the process woke up to %v late), want at most one: %v", i, fails, addrs[1], m.Lateness(), err)
			}
			if err := judge.Verdict(fmt.Sprintf("client %d: the failed call", i), time.Since(call), 2*timeout, m.Lateness()); err != nil {
				return err
			}
		}
		el := time.Since(start)
		if err := judge.Verdict(fmt.Sprintf("client %d: deciding again after its first call", i), el, 2*timeout, m.Lateness()); err != nil {
			return err
		}
		slowest = max(slowest, el)
		if got := c.replicas[c.pref.Load()].addr; got != addrs[1] {
			return fmt.Errorf("client %d prefers %s, want the live replica %s", i, got, addrs[1])
		}
	}
	t.Logf("3 clients failed over, the slowest in %v (the process woke up to %v late)", slowest, m.Stop())
	return nil
}

// waitReady waits until every replica connection of c is ready (or fails
// the test after 10s): connections dial in the background, and a test of
// failover needs them all up before it kills one.
func waitReady(t *testing.T, c *TokenServer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range c.replicas {
		for st := r.cc.GetState(); st != connectivity.Ready; st = r.cc.GetState() {
			r.cc.Connect()
			if !r.cc.WaitForStateChange(ctx, st) {
				t.Fatalf("replica %s: connection %v after 10s, want ready", r.addr, st)
			}
		}
	}
}

// TestRemoteRedisKilled: with Redis gone, replicas answer FAIL, and the
// engine follows each rule's fallback; the client's breaker then fails
// calls at once; when Redis is back, decisions resume.
func TestRemoteRedisKilled(t *testing.T) {
	srv := redistest.Start(t)
	_, addrs := redisReplicas(t, srv, 2, cluster.WithBreaker(2, 20*time.Millisecond))
	base := uniq("remote-redis-down")
	allow := crule("a", base+"-allow", flow.AlgoFixedWindow, 1000, time.Hour)
	allow.Cluster.Fallback = "allow"
	deny := crule("d", base+"-deny", flow.AlgoFixedWindow, 1000, time.Hour)
	local := crule("l", base+"-local", flow.AlgoFixedWindow, 4, time.Hour)
	local.Cluster.Fallback = "local"
	c := newRemote(t, addrs, WithTimeout(time.Second), WithBreaker(3, 200*time.Millisecond))
	e := newEngine(t, c, t0, allow, deny, local)
	if p, err := e.Entry(deny.Resource); err != nil {
		t.Fatalf("with Redis up: %v", err)
	} else {
		p.Exit()
	}
	srv.Kill()
	start := time.Now()
	localPassed := 0
	for i := range 10 {
		if p, err := e.Entry(allow.Resource); err != nil {
			t.Fatalf("allow fallback, call %d: %v", i, err)
		} else {
			p.Exit()
		}
		var be *flow.BlockError
		if _, err := e.Entry(deny.Resource); !errors.As(err, &be) || be.Reason != flow.ReasonClusterUnavailable {
			t.Fatalf("deny fallback, call %d: %v, want a block for %q", i, err, flow.ReasonClusterUnavailable)
		}
		if p, err := e.Entry(local.Resource); err == nil {
			localPassed++
			p.Exit()
		}
	}
	el := time.Since(start)
	fb := e.Snapshot().Cluster.Fallbacks
	t.Logf("30 calls with Redis down in %v; fallbacks %v; breaker open %v; stats %+v", el, fb, c.BreakerOpen(), c.Stats())
	if el > time.Second {
		t.Fatalf("30 calls with Redis down took %v, want fast failures (breakers), under 1s", el)
	}
	if localPassed != 4 {
		t.Fatalf("local fallback admitted %d of 10, want the local limit 4", localPassed)
	}
	if fb["allow"] != 10 || fb["deny"] != 10 || fb["local"] != 10 {
		t.Fatalf("fallbacks %v, want 10 of each", fb)
	}
	if st := c.Stats(); st.BreakerRejected == 0 {
		t.Fatalf("breaker never failed a call fast: %+v", st)
	}
	srv.Restart()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, err := e.Entry(deny.Resource)
		if err == nil {
			p.Exit()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no decision 5s after Redis came back: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // waiting for Redis and the breakers' probes, not for our logic
	}
}

// hangTS never answers until the call's context ends: a replica whose
// Redis hangs, or a frozen process.
type hangTS struct{ allowAll }

func (hangTS) Acquire(ctx context.Context, _ flow.TokenRequest) (flow.TokenResult, error) {
	<-ctx.Done()
	return flow.TokenResult{}, ctx.Err()
}

// TestRemoteHungReplica: a call to a replica that does not answer fails
// at the per-call timeout (it may have been applied, so it is not sent
// again), and the next call goes to the other replica. The deadline travels
// with the call, so the replica may see it first and answer FAIL just
// before the client times out: that too must move the client on.
func TestRemoteHungReplica(t *testing.T) {
	hung, live := startRemoteReplica(t, hangTS{}), startRemoteReplica(t, allowAll{})
	const timeout = 100 * time.Millisecond
	c := newRemote(t, []string{hung.addr, live.addr}, WithTimeout(timeout))
	waitReady(t, c)
	rule := crule("r", "hung", flow.AlgoFixedWindow, 10, time.Second)
	req := flow.TokenRequest{Resource: "hung", Tokens: 1, Factor: 1, Rules: []*flow.Rule{&rule}}
	c.pref.Store(0)
	start := time.Now()
	_, err := c.Acquire(context.Background(), req)
	el := time.Since(start)
	// Not before the timeout, and not a second timeout later.
	if !errors.Is(err, flow.ErrTokenServerUnavailable) || el < timeout || el >= 2*timeout {
		t.Fatalf("call to the hung replica: %v after %v, want unavailable at the %v timeout", err, el, timeout)
	}
	// The hung replica never answers: a decision is the live one's, made
	// under the per-call timeout (or this call would fail).
	if res, err := c.Acquire(context.Background(), req); err != nil || !res.Allowed {
		t.Fatalf("next call: %+v, %v; want it decided by the live replica %s (hung %s)", res, err, live.addr, hung.addr)
	}
}

// TestRemoteReleaseAfterReplicaDies: a concurrency permit taken through a
// replica that then dies is released through the other one on Exit.
func TestRemoteReleaseAfterReplicaDies(t *testing.T) {
	srv := redistest.Start(t)
	reps, addrs := redisReplicas(t, srv, 2)
	r := crule("r", uniq("remote-release"), flow.AlgoConcurrency, 1, time.Second)
	es, cs := remoteEngines(t, addrs, 1, r)
	cs[0].pref.Store(0)
	p, err := es[0].Entry(r.Resource)
	if err != nil {
		t.Fatal(err)
	}
	reps[0].srv.Stop()
	p.Exit()
	key := "flowgate:{" + r.Resource + "|global|}:r"
	if n, err := srv.Client().ZCard(context.Background(), key).Result(); err != nil || n != 0 {
		t.Fatalf("permits held after Exit: %d (%v), want 0", n, err)
	}
	p, err = es[0].Entry(r.Resource)
	if err != nil {
		t.Fatalf("the cap's one permit after the release: %v", err)
	}
	p.Exit()
}
