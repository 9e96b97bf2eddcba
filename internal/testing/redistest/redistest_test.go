package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "embed"

	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed testdata/incrby.lua
	incrbyLua string
	//go:embed testdata/set_all.lua
	setAllLua string
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestStartSetGetEval(t *testing.T) {
	s := redistest.Start(t, redistest.WithConfig("maxmemory", "10mb"))
	ctx := ctxFor(t, 5*time.Second)
	if want := fmt.Sprintf("127.0.0.1:%d", s.Port); s.Addr != want {
		t.Fatalf("Addr = %q, want %q", s.Addr, want)
	}
	c := s.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want \"v\"", got, err)
	}
	script := redis.NewScript(incrbyLua)
	for i, want := range []int64{5, 10} {
		got, err := script.Run(ctx, c, []string{"n"}, 5).Int64()
		if err != nil || got != want {
			t.Fatalf("EVAL #%d = %d, %v; want %d", i, got, err, want)
		}
	}
	// WithConfig reached redis.conf: 10mb is 10*1024*1024 bytes.
	if got, err := c.ConfigGet(ctx, "maxmemory").Result(); err != nil || got["maxmemory"] != fmt.Sprint(10<<20) {
		t.Fatalf("CONFIG GET maxmemory = %v, %v; want %d", got, err, 10<<20)
	}
	// Persistence is off, so Restart really starts empty.
	if got, err := c.ConfigGet(ctx, "save").Result(); err != nil || got["save"] != "" {
		t.Fatalf("CONFIG GET save = %q, %v; want empty", got["save"], err)
	}
	out, err := s.CLI(ctx, "GET", "k")
	if err != nil || strings.TrimSpace(out) != "v" {
		t.Fatalf("redis-cli GET k = %q, %v; want v", out, err)
	}
}

func TestKillRestart(t *testing.T) {
	s := redistest.Start(t)
	ctx := ctxFor(t, 10*time.Second)
	c := s.Client()
	sha, err := c.ScriptLoad(ctx, incrbyLua).Result()
	if err != nil {
		t.Fatalf("SCRIPT LOAD: %v", err)
	}
	if got, err := c.ScriptExists(ctx, sha).Result(); err != nil || !got[0] {
		t.Fatalf("SCRIPT EXISTS before kill = %v, %v; want [true]", got, err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	oldPID, port := s.PID(), s.Port

	s.Kill()
	if s.Running() {
		t.Fatal("Running after Kill = true")
	}
	if err := syscall.Kill(oldPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill(%d, 0) after Kill = %v, want ESRCH (process reaped)", oldPID, err)
	}
	start := time.Now()
	if err := c.Get(ctx, "k").Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("GET on a killed server = %v, want a connection error", err)
	}
	t.Logf("GET on a killed server failed after %v", time.Since(start))
	s.Kill() // idempotent

	s.Restart()
	if s.Port != port || s.PID() == oldPID || !s.Running() {
		t.Fatalf("after Restart: port %d (was %d), pid %d (was %d), running %v",
			s.Port, port, s.PID(), oldPID, s.Running())
	}
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET k after Restart = %v, want redis.Nil (empty server)", err)
	}
	if got, err := c.ScriptExists(ctx, sha).Result(); err != nil || got[0] {
		t.Fatalf("SCRIPT EXISTS after Restart = %v, %v; want [false]", got, err)
	}
	if err := c.Set(ctx, "k", "w", 0).Err(); err != nil {
		t.Fatalf("SET after Restart: %v", err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "w" {
		t.Fatalf("GET after Restart = %q, %v; want \"w\"", got, err)
	}
}

func TestPauseResume(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	if err := c.Ping(ctxFor(t, 5*time.Second)).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	s.Pause()
	const timeout = 100 * time.Millisecond
	start := time.Now()
	err := c.Get(ctxFor(t, timeout), "k").Err()
	elapsed := time.Since(start)
	var ne net.Error
	if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("GET on a paused server = %v, want a timeout", err)
	}
	// Bounded by the context, not by ReadTimeout (2s).
	if elapsed > time.Second {
		t.Fatalf("GET on a paused server took %v, want about %v", elapsed, timeout)
	}
	t.Logf("GET on a paused server timed out after %v", elapsed)
	s.Resume()
	if err := c.Get(ctxFor(t, 5*time.Second), "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after Resume = %v, want redis.Nil", err)
	}
}

// TestCleanupReapsProcesses proves t.Cleanup leaves no redis-server behind,
// even a paused one. TestCluster checks the same for cluster nodes.
func TestCleanupReapsProcesses(t *testing.T) {
	var pid int
	t.Run("paused", func(t *testing.T) {
		s := redistest.Start(t)
		s.Pause()
		pid = s.PID()
	})
	if pid == 0 {
		t.Skip("no server was started")
	}
	requireGone(t, pid)
}

// requireGone fails t unless every pid has exited and been reaped.
func requireGone(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("kill(%d, 0) = %v, want ESRCH (process gone)", pid, err)
		}
	}
}

func TestCluster(t *testing.T) {
	t.Parallel() // a cluster takes 2s to form; overlap it with the other one
	var pids []int
	t.Run("smoke", func(t *testing.T) {
		pids = clusterSmoke(t)
	})
	if len(pids) != 4 {
		t.Skipf("cluster test did not finish (pids %v)", pids)
	}
	// Cleanup reaped every node, including the one the test killed.
	requireGone(t, pids...)
}

// clusterSmoke exercises a cluster and returns the pids of every node
// process it ran, the restarted node's twice.
func clusterSmoke(t *testing.T) []int {
	start := time.Now()
	c := redistest.StartCluster(t)
	t.Logf("cluster converged in %v", time.Since(start))
	var pids []int
	for _, n := range c.Nodes {
		pids = append(pids, n.PID())
	}
	ctx := ctxFor(t, 10*time.Second)
	cc := c.Client()
	if len(c.Nodes) != 3 || len(c.Addrs) != 3 {
		t.Fatalf("%d nodes, %d addrs; want 3, 3", len(c.Nodes), len(c.Addrs))
	}

	// One key per node's slot range, written through the cluster client and
	// read back from that node directly, so routing really happened.
	keys := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		lo, hi := redistest.SlotRange(i)
		for j := 0; keys[i] == ""; j++ {
			if k := fmt.Sprintf("key:%d", j); redistest.KeySlot(k) >= lo && redistest.KeySlot(k) <= hi {
				keys[i] = k
			}
		}
		if err := cc.Set(ctx, keys[i], n.Addr, 0).Err(); err != nil {
			t.Fatalf("cluster SET %s: %v", keys[i], err)
		}
		if got, err := n.Client().Get(ctx, keys[i]).Result(); err != nil || got != n.Addr {
			t.Fatalf("node %d GET %s = %q, %v; want %q", i, keys[i], got, err, n.Addr)
		}
		if got := c.NodeFor(keys[i]); got != n {
			t.Fatalf("NodeFor(%q) = %s, want %s", keys[i], got.Addr, n.Addr)
		}
	}

	// KeySlot agrees with the server, hash-tag edge cases included.
	for _, k := range []string{"foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "{}x", "a{b}c{d}"} {
		want, err := c.Nodes[0].Client().ClusterKeySlot(ctx, k).Result()
		if err != nil || int64(redistest.KeySlot(k)) != want {
			t.Fatalf("KeySlot(%q) = %d; CLUSTER KEYSLOT = %d, %v", k, redistest.KeySlot(k), want, err)
		}
	}

	setAll := redis.NewScript(setAllLua)
	tagged := []string{"{acct:7}.tokens", "{acct:7}.stamp"}
	if got, err := setAll.Run(ctx, cc, tagged, "x").Int64(); err != nil || got != 2 {
		t.Fatalf("EVAL on one hash tag = %d, %v; want 2", got, err)
	}
	for _, k := range tagged {
		if got, err := cc.Get(ctx, k).Result(); err != nil || got != "x" {
			t.Fatalf("GET %s = %q, %v; want x", k, got, err)
		}
	}

	untagged := []string{"acct:7.tokens", "acct:7.stamp"}
	if redistest.KeySlot(untagged[0]) == redistest.KeySlot(untagged[1]) {
		t.Fatalf("test keys %v share a slot; pick others", untagged)
	}
	if err := setAll.Run(ctx, cc, untagged, "x").Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("EVAL across slots = %v, want CROSSSLOT", err)
	}

	// A killed node's keys fail; the test can see a crash through the cluster client.
	c.Nodes[1].Kill()
	start = time.Now()
	if err := cc.Get(ctxFor(t, 2*time.Second), keys[1]).Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("GET on a killed node = %v, want an error", err)
	}
	t.Logf("GET on a killed node failed after %v", time.Since(start))
	// Restarted, it rejoins from nodes.conf with its slots but no keys.
	c.Nodes[1].Restart()
	pids = append(pids, c.Nodes[1].PID())
	start = time.Now()
	c.WaitHealthy(t)
	t.Logf("cluster healthy %v after the restart", time.Since(start))
	if err := cc.Get(ctx, keys[1]).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET on the restarted node = %v, want redis.Nil", err)
	}
	if err := cc.Set(ctx, keys[1], "again", 0).Err(); err != nil {
		t.Fatalf("SET on the restarted node: %v", err)
	}
	if got, err := c.Nodes[1].Client().Get(ctx, keys[1]).Result(); err != nil || got != "again" {
		t.Fatalf("restarted node GET = %q, %v; want again", got, err)
	}
	return pids
}
