package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/internal/clustertest"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/judge"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

// The Redis Cluster soak (make soak; FLOWGATE_SOAK_CLUSTER=duration per
// algorithm, at least one fault of each kind; off by default): the chaos soak's 4 instances x 8 callers on
// one global rule (100/s, fallback local), each instance's token server on
// a redis.NewClusterClient built from the nodes' addresses alone, over six
// nodes (3 masters, each with a replica; node timeout 2s, full coverage
// off, no persistence). Faults in rotation, 2s of calm after each:
//   - kill -9 of the master serving the rule's key, until its replica is
//     promoted; the old master then restarts and rejoins as a replica;
//   - CLUSTER FAILOVER of that shard's replica, until it is master;
//   - a lost shard: another master and its replica killed for 1.5s, then
//     restarted.
// The rule's key lives on one master, so the first two faults take its
// decisions to the fallback and the third must not touch them (see
// healthyShare); a try the host is too loaded to judge is run again.

// shard is a master and its replica; which is which changes with faults.
type shard [2]*redistest.Server

func soakClusterDuration(t *testing.T) time.Duration {
	v := os.Getenv("FLOWGATE_SOAK_CLUSTER")
	if v == "" {
		t.Skip("the Redis Cluster soak runs under make soak (FLOWGATE_SOAK_CLUSTER=duration)")
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("FLOWGATE_SOAK_CLUSTER=%q: want a duration", v)
	}
	return d
}

func TestChaosSoakCluster(t *testing.T) {
	d := soakClusterDuration(t)
	full := redistest.WithConfig("cluster-require-full-coverage", "no")
	cl := redistest.StartCluster(t, full)
	shards := addReplicas(t, cl, full)
	redis.SetLogger(&countLogger{}) // process-wide: go-redis's dial lines are the soak's noise
	for _, algo := range []flow.Algorithm{flow.AlgoFixedWindow, flow.AlgoTokenBucket} {
		name := "cluster local/" + algo.String()
		judge.Retry(t, soakClusterTries, func(attempt int) error {
			f := soakClusterRun(t, cl, shards, algo, d, attempt == soakClusterTries-1)
			soakClusterCheck(t, name, algo, f)
			return f.healthy
		})
	}
}

func soakClusterCheck(t *testing.T, name string, algo flow.Algorithm, f clusterFigures) {
	t.Helper()
	t.Logf("%-26s calls %6d  latency max %7v p99.9 %7v  worst healthy second %3d/%d (of %d)  worst outage second %3d (%d locally; of %d)  goroutines %d -> %d  fewest instances %d",
		name, f.calls, f.maxLat.Round(100*time.Microsecond), f.p999.Round(100*time.Microsecond), f.worstHealthy, soakLimit, f.soakFigures.healthy,
		f.worstOutage, f.worstOutageLocal, f.outages, f.goroutinesBefore, f.goroutinesAfter, f.fewestInstances)
	for _, kind := range []string{"kill -9 master", "CLUSTER FAILOVER", "lost shard"} {
		t.Logf("%-26s   %-16s worst second %3d (%d locally)  recovery %v", name, kind, f.byFault[kind], f.byFaultLocal[kind], roundAll(f.recovery[kind]))
	}
	t.Logf("%-26s   lost shard: %s", name, f.healthyFigures)
	bound := 2 * soakLimit
	if algo == flow.AlgoTokenBucket {
		bound = 3 * soakLimit // burst + 2 x rate, as on one Redis
	}
	for kind, n := range f.byFault {
		if n > bound {
			t.Errorf("%s: a second of %s admitted %d (%d locally), want <= %d", name, kind, n, f.byFaultLocal[kind], bound)
		}
	}
	if f.fewestInstances < soakEngines {
		t.Errorf("%s: a local fallback divided the limit by %d instances, want %d", name, f.fewestInstances, soakEngines)
	}
	if f.goroutinesAfter > f.goroutinesBefore+2 {
		t.Errorf("%s: goroutines %d after, %d before", name, f.goroutinesAfter, f.goroutinesBefore)
	}
}

// soakClusterTries bounds the runs of one algorithm the host was too loaded
// to judge (see healthyShare).
const soakClusterTries = 3

// soakCallTimeout is the token server's per-call timeout in the soak (its
// default).
const soakCallTimeout = 20 * time.Millisecond

// clusterFigures are the cluster run's soakFigures, and the judgement of
// the lost shards (see healthyShare).
type clusterFigures struct {
	soakFigures
	healthy        error
	healthyFigures string
}

// healthyShare judges the calls from each lost shard's start to a second
// after its end: the rule's key lives on a healthy shard, so at least 99%
// of them are decided by Redis or, on a host so loaded that calls time out
// with no fault at all, the share that fell back is at most twice the
// larger of the calm seconds' before and after the fault. A try cannot be
// judged (judge.ErrUnjudged) but on the last, which is judged all the same
// (as clustertest.Judgeable), when a calm second fell back on over 10%, or
// when it misses while the control goroutine was held up for at least the
// per-call timeout during the fault: the timeouts may be the machine's
// (judge's rule).
func healthyShare(calls []soakCall, faults []soakFault, control []stallSample, last bool) (figures string, err error) {
	share := func(from, to int64) (byRedis, total int) {
		for _, c := range calls {
			if c.start >= from && c.start < to {
				total++
				if c.fromRedis {
					byRedis++
				}
			}
		}
		return byRedis, total
	}
	fell := func(byRedis, total int) float64 { return 100 - clustertest.Pct(byRedis, total) }
	var out []string
	for _, fl := range faults {
		if fl.kind != "lost shard" {
			continue
		}
		at, back := fl.at.UnixNano(), fl.back.Add(time.Second).UnixNano()
		r, n := share(at, back)
		bR, bT := share(at-int64(time.Second), at)
		aR, aT := share(back, back+int64(time.Second))
		calm := max(fell(bR, bT), fell(aR, aT))
		held := time.Duration(0) // the control goroutine's longest late wake-up during the fault
		for _, st := range control {
			if st.end >= at && st.start <= back {
				held = max(held, st.late)
			}
		}
		out = append(out, fmt.Sprintf("%d/%d (%.2f%%) by Redis, calm seconds %d/%d and %d/%d, process held up to %v",
			r, n, clustertest.Pct(r, n), bR, bT, aR, aT, held.Round(time.Millisecond)))
		switch {
		case !last && (bT == 0 || aT == 0 || calm > 10):
			err = fmt.Errorf("lost shard: %s: the host is too loaded to judge: %w", out[len(out)-1], judge.ErrUnjudged)
		case n > 0 && fell(r, n) <= max(1, 2*calm):
		case !last && held >= soakCallTimeout:
			err = fmt.Errorf("lost shard: %s: held up past the per-call timeout: %w", out[len(out)-1], judge.ErrUnjudged)
		default:
			return strings.Join(out, "; "), fmt.Errorf("lost shard, the rule's key on a healthy shard: %s, want >= 99%% (or a fallback share <= twice the calm seconds')", out[len(out)-1])
		}
	}
	if len(out) == 0 {
		err = errors.New("no lost shard struck: the soak is too short to judge it")
	}
	return strings.Join(out, "; "), err
}

func soakClusterRun(t *testing.T, cl *redistest.Cluster, shards []shard, algo flow.Algorithm, d time.Duration, last bool) clusterFigures {
	f := clusterFigures{soakFigures: soakFigures{recovery: map[string][]time.Duration{}, goroutinesBefore: runtime.NumGoroutine()}}
	r := flow.Rule{ID: "soak", Resource: uniq("csoak"), Algorithm: algo, Limit: soakLimit, Window: time.Second,
		Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "local"}}
	home := shardOf(redistest.KeySlot("{" + r.Resource + "|global|}:soak")) // the shard of the rule's key
	prefix := uniq("csoak") + ":"
	var servers []*RedisTokenServer
	var engines []*flow.Engine
	var seen []*countLog
	for range soakEngines {
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
		t.Cleanup(func() { rdb.Close() })
		opts := []Option{WithPrefix(prefix)}
		if os.Getenv("FLOWGATE_SOAK_TRACE") != "" { // each node outage, with its cause
			opts = append(opts, WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
		}
		ts, err := NewRedisTokenServer(rdb, opts...)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, &countLog{})
		e := flow.NewEngine(flow.WithTokenServer(soakServer{noteFailures{ts}, seen[len(seen)-1]}))
		if err := e.LoadRules([]flow.Rule{r}); err != nil {
			t.Fatal(err)
		}
		servers, engines = append(servers, ts), append(engines, e)
	}
	for _, ts := range servers {
		if _, err := ts.Heartbeat(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	stopLoad := soakLoad(t, engines, r.Resource)
	begin := time.Now()
	var faults []soakFault
	kinds := []string{"kill -9 master", "CLUSTER FAILOVER", "lost shard"}
	for i := 0; i < len(kinds) || time.Since(begin) < d; i++ { // every kind at least once
		time.Sleep(2 * time.Second)
		kind := kinds[i%len(kinds)]
		faults = append(faults, clusterFault(t, shards, home, kind))
	}
	time.Sleep(2 * time.Second)
	calls, control := stopLoad()
	for _, ts := range servers {
		ts.Close()
	}
	for start := time.Now(); time.Since(start) < 3*time.Second && runtime.NumGoroutine() > f.goroutinesBefore; {
		time.Sleep(10 * time.Millisecond)
	}
	f.goroutinesAfter = runtime.NumGoroutine()
	soakAnalyse(&f.soakFigures, calls, faults, control, "local")
	f.fewestInstances = soakEngines
	for _, c := range seen {
		f.fewestInstances = min(f.fewestInstances, c.lowest(begin.UnixNano()))
	}
	worstByFault(&f.soakFigures, calls, faults)
	f.healthyFigures, f.healthy = healthyShare(calls, faults, control, last)
	soakTrace(t.Logf, "cluster local/"+algo.String(), 2*soakLimit, calls, faults, seen)
	soakRefunds(t.Logf, "cluster local/"+algo.String(), soakLimit, calls, faults)
	soakLocalCauses(t.Logf, "cluster local/"+algo.String(), calls, faults)
	return f
}

// worstByFault finds, for each fault kind, the most admitted in a whole
// second from the fault's start to one second after its end.
func worstByFault(f *soakFigures, calls []soakCall, faults []soakFault) {
	f.byFault, f.byFaultLocal = map[string]int{}, map[string]int{}
	per := map[int64][2]int{} // admitted, of them locally
	for _, c := range calls {
		s := c.start / 1e9
		if c.admitted && (c.start+int64(c.took))/1e9 == s {
			v := per[s]
			v[0]++
			if !c.fromRedis {
				v[1]++
			}
			per[s] = v
		}
	}
	for _, fl := range faults {
		for s := fl.at.Unix(); s <= fl.back.Unix()+1; s++ {
			if v := per[s]; v[0] > f.byFault[fl.kind] {
				f.byFault[fl.kind], f.byFaultLocal[fl.kind] = v[0], v[1]
			}
		}
	}
}

// shardOf is the shard (StartCluster's node order) serving slot.
func shardOf(slot int) int {
	for i := range 3 {
		if lo, hi := redistest.SlotRange(i); slot >= lo && slot <= hi {
			return i
		}
	}
	return 0
}

// clusterFault strikes one fault and returns once it is over: the victim
// shard's slots served again.
func clusterFault(t *testing.T, shards []shard, home int, kind string) soakFault {
	t.Helper()
	fl := soakFault{kind: kind, at: time.Now()}
	switch kind {
	case "kill -9 master":
		m, r := roles(t, shards[home])
		m.Kill()
		awaitRole(t, r, "master", 20*time.Second)
		fl.back = time.Now()
		m.Restart() // rejoins from nodes.conf as the new master's replica
		awaitLink(t, m, 20*time.Second)
	case "CLUSTER FAILOVER":
		_, r := roles(t, shards[home])
		// Redis gives a manual failover 5s (its master must pause and the
		// replica catch up): a loaded host can miss that, so ask again.
		for try := 1; ; try++ {
			if err := r.Client().Do(context.Background(), "CLUSTER", "FAILOVER").Err(); err != nil {
				t.Fatalf("CLUSTER FAILOVER on %s: %v", r.Addr, err)
			}
			if hasRole(r, "master", 10*time.Second) {
				break
			}
			if try == 3 {
				t.Fatalf("%s: not master after %d CLUSTER FAILOVERs, 10s each", r.Addr, try)
			}
			t.Logf("%s: CLUSTER FAILOVER did not complete within 10s; asking again", r.Addr)
		}
		fl.back = time.Now()
	case "lost shard":
		other := shards[(home+1)%len(shards)]
		m, r := roles(t, other)
		m.Kill()
		r.Kill()
		time.Sleep(1500 * time.Millisecond)
		m.Restart()
		r.Restart()
		fl.back = time.Now()
		awaitLink(t, r, 20*time.Second)
	}
	return fl
}

// roles returns the shard's master and replica, by INFO replication.
func roles(t *testing.T, s shard) (master, replica *redistest.Server) {
	t.Helper()
	if role(s[0]) == "master" {
		return s[0], s[1]
	}
	return s[1], s[0]
}

func role(s *redistest.Server) string {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	info, err := s.Client().Info(ctx, "replication").Result()
	if err != nil {
		return ""
	}
	return infoField(info, "role")
}

func infoField(info, name string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

func awaitRole(t *testing.T, s *redistest.Server, want string, within time.Duration) {
	t.Helper()
	if !hasRole(s, want, within) {
		t.Fatalf("%s: not %s within %v", s.Addr, want, within)
	}
}

// hasRole polls s's role until it is want (true) or within has passed.
func hasRole(s *redistest.Server, want string, within time.Duration) bool {
	for start := time.Now(); role(s) != want; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > within {
			return false
		}
	}
	return true
}

// awaitLink waits until replica s is in sync with its master.
func awaitLink(t *testing.T, s *redistest.Server, within time.Duration) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		info, err := s.Client().Info(ctx, "replication").Result()
		cancel()
		if err == nil && infoField(info, "role") == "slave" && infoField(info, "master_link_status") == "up" {
			return
		}
		if time.Since(start) > within {
			t.Fatalf("%s: no replication link within %v (%v)", s.Addr, within, err)
		}
	}
}

// addReplicas starts one cluster node per master of cl and makes it that
// master's replica, returning the shards in node order.
func addReplicas(t *testing.T, cl *redistest.Cluster, opts ...redistest.Option) []shard {
	t.Helper()
	ctx := context.Background()
	opts = append([]redistest.Option{redistest.WithConfig("cluster-enabled", "yes"),
		redistest.WithConfig("cluster-config-file", "nodes.conf"), redistest.WithConfig("cluster-node-timeout", "2000"),
		redistest.WithConfig("repl-diskless-sync-delay", "0")}, opts...)
	var out []shard
	for _, m := range cl.Nodes {
		r := redistest.Start(t, opts...)
		id, err := m.Client().Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			t.Fatalf("CLUSTER MYID on %s: %v", m.Addr, err)
		}
		if err := r.Client().ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(m.Port)).Err(); err != nil {
			t.Fatalf("CLUSTER MEET: %v", err)
		}
		// REPLICATE needs the master known, which the MEET's handshake takes.
		for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
			err = r.Client().Do(ctx, "CLUSTER", "REPLICATE", id).Err()
			if err == nil {
				break
			}
			if time.Since(start) > 20*time.Second {
				t.Fatalf("CLUSTER REPLICATE %s on %s: %v", id, r.Addr, err)
			}
		}
		out = append(out, shard{m, r})
	}
	for _, s := range out {
		awaitLink(t, s[1], 30*time.Second)
	}
	for _, s := range out { // every node sees all six and the cluster whole
		for _, n := range s {
			for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
				info, err := n.Client().ClusterInfo(ctx).Result()
				if err == nil && infoField(info, "cluster_state") == "ok" && infoField(info, "cluster_known_nodes") == "6" {
					break
				}
				if time.Since(start) > 30*time.Second {
					t.Fatalf("%s: cluster not whole within 30s: %q %v", n.Addr, info, err)
				}
			}
		}
	}
	return out
}
