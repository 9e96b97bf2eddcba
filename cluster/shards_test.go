package cluster

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/internal/clustertest"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

// Redis Cluster faults under traffic: 3 primaries + 3 replicas, node
// timeout 2s, two engines each with a cluster client built as the README
// shows (library defaults) and the default 20ms per-call timeout, per-user
// rules over users on every shard, 8 callers at one call per 2ms each.

// shardCluster starts the 6-node cluster. Full coverage is off: with
// Redis's default (yes) every node refuses every key (CLUSTERDOWN) from
// the moment the cluster marks a primary failed until its replica is
// promoted, whatever the client does (docs/cluster.md).
func shardCluster(t *testing.T) *redistest.Cluster {
	return redistest.StartClusterWithReplicas(t, redistest.WithConfig("cluster-require-full-coverage", "no"))
}

type shardSetup struct {
	c     *redistest.Cluster
	es    []*flow.Engine
	ts    []*RedisTokenServer
	rule  flow.Rule
	users [][]string // users[i] live on c.Nodes[i] at the start
	logs  *logCapture
}

func newShardSetup(t *testing.T, c *redistest.Cluster) *shardSetup {
	t.Helper()
	s := &shardSetup{c: c, logs: &logCapture{t: t}}
	s.rule = crule("per-user", uniq("shard"), flow.AlgoFixedWindow, 1e9, time.Hour)
	s.rule.Level = flow.LevelUser
	for range 2 {
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
		t.Cleanup(func() { rdb.Close() })
		ts := realServer(t, rdb, WithLogger(slog.New(s.logs)))
		s.ts = append(s.ts, ts)
		s.es = append(s.es, realEngine(t, ts, s.rule))
	}
	s.users = clustertest.UsersByShard(c, 20, func(u string) string {
		return clustertest.UserKey("flowgate:", s.rule.Resource, u, s.rule.ID)
	})
	return s
}

func (s *shardSetup) traffic() *clustertest.Traffic {
	return clustertest.StartTraffic(s.es, s.rule.Resource, s.users, 4, 2*time.Millisecond)
}

// pace lets traffic run for d: the load of a fault test, not a wait for
// the logic under test.
func pace(d time.Duration) { time.Sleep(d) }

func shardIs(i int) func(int) bool    { return func(s int) bool { return s == i } }
func shardIsNot(i int) func(int) bool { return func(s int) bool { return s != i } }
func anyShard(int) bool               { return true }

// checkExact: after the fault, a fresh per-user limit of 40 in an hour
// admits exactly 40 of 60 calls for users on every shard, from two engines.
func (s *shardSetup) checkExact(t *testing.T) {
	t.Helper()
	exact := crule("exact", uniq("exact"), flow.AlgoFixedWindow, 40, time.Hour)
	exact.Level = flow.LevelUser
	for _, e := range s.es {
		if err := e.LoadRules([]flow.Rule{s.rule, exact}); err != nil {
			t.Fatal(err)
		}
	}
	for shard, us := range s.users {
		for _, u := range us[:2] {
			passed := 0
			for i := range 60 {
				p, err := s.es[i%2].Entry(exact.Resource, flow.WithUser(u))
				if err == nil {
					passed++
					p.Exit()
				}
			}
			if passed != 40 {
				t.Errorf("after the fault, user %s on shard %d: %d of 60 admitted, want exactly 40 (stats %+v)", u, shard, passed, s.ts[0].Stats())
			}
		}
	}
}

// checkLogs: each server logged one start and one end line for the
// victim's outage (at most a summary every 10s between), and no
// negative duration.
func (s *shardSetup) checkLogs(t *testing.T, node string) {
	t.Helper()
	starts, ends := s.logs.count(node, "unavailable;"), s.logs.count(node, "answers again")
	if starts < len(s.ts) || starts > 2*len(s.ts) || ends != starts {
		t.Errorf("node %s: %d outage start lines and %d end lines from %d servers, want one each per outage:\n%s", node, starts, ends, len(s.ts), s.logs.dump())
	}
	if neg := s.logs.negative(); neg != "" {
		t.Errorf("negative duration logged: %s", neg)
	}
}

// TestShardPrimaryKilled: kill -9 of a primary under traffic. Keys on the
// other shards are decided by Redis for >= 99% of their calls during the
// outage; the victim's keys follow their rule's fallback (deny) until the
// replica is promoted and are back on Redis within 1s of it; exact after.
func TestShardPrimaryKilled(t *testing.T) {
	c := shardCluster(t)
	s := newShardSetup(t, c)
	const victim = 1
	victimAddr := c.Nodes[victim].Addr
	tr := s.traffic()
	pace(time.Second)
	killed := time.Now()
	c.Nodes[victim].Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	promoted, err := redistest.AwaitPrimary(ctx, c.Replicas[victim])
	if err != nil {
		tr.Stop()
		t.Fatal(err)
	}
	pace(2 * time.Second)
	out, errs := tr.Stop()
	clustertest.CheckErrors(t, errs)
	k, p := tr.Since(killed), tr.Since(promoted)
	bR, bT := clustertest.Share(out, 0, k, anyShard)
	hR, hT := clustertest.Share(out, k, p, shardIsNot(victim))
	vR, vT := clustertest.Share(out, k+50*time.Millisecond, p-50*time.Millisecond, shardIs(victim))
	back := clustertest.LastFallback(out, shardIs(victim)) - p
	aR, aT := clustertest.Share(out, p+time.Second, 1<<62, anyShard)
	t.Logf("before the kill: %d/%d (%.2f%%) by Redis; outage %v: healthy shards %d/%d (%.2f%%), victim %d/%d by Redis; victim's last fallback %v after promotion; after +1s: %d/%d (%.2f%%)",
		bR, bT, clustertest.Pct(bR, bT), p-k, hR, hT, clustertest.Pct(hR, hT), vR, vT, back, aR, aT, clustertest.Pct(aR, aT))
	judge(t, "healthy shards during the outage", hR, hT, bR, bT)
	if vT == 0 || vR != 0 {
		t.Errorf("victim's keys during the outage: %d/%d decided by Redis, want all %d by the fallback", vR, vT, vT)
	}
	if back > time.Second {
		t.Errorf("victim's keys fell back until %v after the promotion, want within 1s", back)
	}
	if aT == 0 || aR != aT {
		t.Errorf("from 1s after the promotion: %d/%d decided by Redis, want all", aR, aT)
	}
	s.checkExact(t)
	s.checkLogs(t, victimAddr)
}

// TestShardLost: a primary and its replica both killed, full coverage
// off: the other shards are decided by Redis for >= 99% of their calls for
// as long as the loss lasts (past the cluster marking the primary failed);
// the lost keys follow their fallback; when the primary comes back (empty,
// same id and slots) its keys return to Redis with no restart of ours.
func TestShardLost(t *testing.T) {
	c := shardCluster(t)
	s := newShardSetup(t, c)
	const victim = 2
	tr := s.traffic()
	pace(time.Second)
	killed := time.Now()
	c.Replicas[victim].Kill()
	c.Nodes[victim].Kill()
	pace(5 * time.Second) // past node timeout (2s) and the FAIL flag
	restarted := time.Now()
	c.Nodes[victim].Restart()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	backAt, err := awaitRedis(ctx, s, victim)
	out, errs := tr.Stop()
	clustertest.CheckErrors(t, errs)
	if err != nil {
		t.Fatalf("lost shard's keys not back on Redis 20s after its primary restarted: %v", err)
	}
	k, r := tr.Since(killed), tr.Since(restarted)
	bR, bT := clustertest.Share(out, 0, k, anyShard)
	hR, hT := clustertest.Share(out, k, r, shardIsNot(victim))
	vR, vT := clustertest.Share(out, k+50*time.Millisecond, r, shardIs(victim))
	t.Logf("before: %d/%d (%.2f%%) by Redis; loss of %v: other shards %d/%d (%.2f%%), lost shard %d/%d by Redis; back on Redis %v after the restart",
		bR, bT, clustertest.Pct(bR, bT), r-k, hR, hT, clustertest.Pct(hR, hT), vR, vT, backAt.Sub(restarted))
	judge(t, "other shards during the loss", hR, hT, bR, bT)
	if vT == 0 || vR != 0 {
		t.Errorf("lost shard's keys: %d/%d decided by Redis, want all %d by the fallback", vR, vT, vT)
	}
	s.checkExact(t)
}

// awaitRedis polls until a call on every user of shard is decided by
// Redis, and returns when it was.
func awaitRedis(ctx context.Context, s *shardSetup, shard int) (time.Time, error) {
	for {
		ok := true
		for _, u := range s.users[shard] {
			if _, err := s.es[0].Entry(s.rule.Resource, flow.WithUser(u)); err != nil {
				ok = false
				break
			}
		}
		if ok {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(20 * time.Millisecond): // polling Redis, not our logic
		}
	}
}

// TestShardManualFailover: CLUSTER FAILOVER on a replica under traffic.
// Every shard is decided by Redis for >= 99% of the calls of the whole
// run; the moved primary's keys are on Redis within 1s of the replica
// taking over; exact after.
func TestShardManualFailover(t *testing.T) {
	c := shardCluster(t)
	s := newShardSetup(t, c)
	const victim = 0
	tr := s.traffic()
	pace(time.Second)
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Replicas[victim].Client().Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		tr.Stop()
		t.Fatal(err)
	}
	promoted, err := redistest.AwaitPrimary(ctx, c.Replicas[victim])
	if err != nil {
		tr.Stop()
		t.Fatal(err)
	}
	pace(2 * time.Second)
	out, errs := tr.Stop()
	clustertest.CheckErrors(t, errs)
	f, p := tr.Since(started), tr.Since(promoted)
	bR, bT := clustertest.Share(out, 0, f, anyShard)
	hR, hT := clustertest.Share(out, f, 1<<62, shardIsNot(victim))
	vR, vT := clustertest.Share(out, f, 1<<62, shardIs(victim))
	back := max(0, clustertest.LastFallback(out, shardIs(victim))-p)
	t.Logf("before: %d/%d (%.2f%%) by Redis; failover took %v; from it on: other shards %d/%d (%.2f%%), moved shard %d/%d (%.2f%%); its last fallback %v after the promotion",
		bR, bT, clustertest.Pct(bR, bT), p-f, hR, hT, clustertest.Pct(hR, hT), vR, vT, clustertest.Pct(vR, vT), back)
	judge(t, "other shards through the failover", hR, hT, bR, bT)
	if back > time.Second {
		t.Errorf("moved shard's keys fell back until %v after the promotion, want within 1s", back)
	}
	s.checkExact(t)
}

// TestShardReshard: the slots of every user of shard 0 move to shard 2
// (IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE) under traffic: >= 99% of
// the calls are decided by Redis (ASK and MOVED are followed) and the
// limits are exact after.
func TestShardReshard(t *testing.T) {
	c := shardCluster(t)
	s := newShardSetup(t, c)
	tr := s.traffic()
	pace(time.Second)
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, u := range s.users[0] {
		slot := redistest.KeySlot(clustertest.UserKey("flowgate:", s.rule.Resource, u, s.rule.ID))
		if err := c.MoveSlots(ctx, slot, slot, c.Nodes[0], c.Nodes[2]); err != nil {
			tr.Stop()
			t.Fatal(err)
		}
	}
	moved := time.Now()
	pace(time.Second)
	out, errs := tr.Stop()
	clustertest.CheckErrors(t, errs)
	bR, bT := clustertest.Share(out, 0, tr.Since(started), anyShard)
	aR, aT := clustertest.Share(out, tr.Since(started), 1<<62, anyShard)
	t.Logf("before: %d/%d (%.2f%%) by Redis; %d slots moved in %v; from the move on: %d/%d (%.2f%%)",
		bR, bT, clustertest.Pct(bR, bT), len(s.users[0]), moved.Sub(started), aR, aT, clustertest.Pct(aR, aT))
	judge(t, "every shard through the reshard", aR, aT, bR, bT)
	s.checkExact(t)
	for _, u := range s.users[0] {
		k := clustertest.UserKey("flowgate:", s.rule.Resource, u, s.rule.ID)
		if n, err := c.Nodes[2].Client().Exists(ctx, k).Result(); err != nil || n != 1 {
			t.Fatalf("key %s not on its new node after the move: %d, %v", k, n, err)
		}
	}
}

// judge fails t unless at least 99% of total calls were decided by Redis,
// or, on a host so loaded that calls time out with no fault at all, the
// share that fell back is at most twice the share that fell back before
// the fault (baseR of baseT): the fault must add nothing the load does not.
func judge(t *testing.T, what string, byRedis, total, baseR, baseT int) {
	t.Helper()
	if total == 0 || baseT == 0 {
		t.Errorf("%s: %d calls, %d before the fault: no traffic to judge", what, total, baseT)
		return
	}
	fell, baseFell := 100-clustertest.Pct(byRedis, total), 100-clustertest.Pct(baseR, baseT)
	if fell > max(1, 2*baseFell) {
		t.Errorf("%s: %d/%d (%.2f%%) decided by Redis, want >= 99%% (or a fallback share <= twice the %.2f%% of the healthy cluster before the fault)",
			what, byRedis, total, 100-fell, baseFell)
	}
}

// logCapture is a slog handler that keeps the records (and logs them to
// the test, seen with -v or on failure).
type logCapture struct {
	t    *testing.T
	mu   sync.Mutex
	recs []string
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler      { return l }
func (l *logCapture) WithGroup(string) slog.Handler           { return l }

func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, b.String())
	l.mu.Unlock()
	l.t.Log(b.String())
	return nil
}

// count returns the records naming node whose message contains what.
func (l *logCapture) count(node, what string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if strings.Contains(r, "node="+node) && strings.Contains(r, what) {
			n++
		}
	}
	return n
}

// negative returns a record with a negative duration, or "".
func (l *logCapture) negative() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if strings.Contains(r, "=-") {
			return r
		}
	}
	return ""
}

func (l *logCapture) dump() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.recs, "\n")
}
