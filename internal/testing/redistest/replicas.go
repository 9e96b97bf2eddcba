package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// StartClusterWithReplicas is StartCluster with one replica per primary:
// six nodes, Replicas[i] replicating Nodes[i], as a production cluster is
// laid out. Killing a primary then promotes its replica once the others
// agree it failed (cluster-node-timeout, 2s here, plus an election); WithConfig
// ("cluster-require-full-coverage", "no") keeps the other slots served
// when a primary and its replica are both gone. It returns once every
// replica's link to its primary is up.
//
// One such cluster runs on the machine at a time: the fault tests that use
// it measure shares of calls and recovery times under traffic, and two of
// them at once (packages run in parallel) would each measure the other's
// load. A second caller waits, holding a lock file in the temporary
// directory, until the first test's cleanup.
func StartClusterWithReplicas(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	exclusive(t)
	// A replica's first sync starts at once, not after diskless sync's 5s.
	cfg := newConfig(append([]Option{WithConfig("repl-diskless-sync-delay", "0")}, opts...))
	cfg.bus = true
	c := startNodes(t, cfg)
	for range clusterSize {
		c.Replicas = append(c.Replicas, start(t, cfg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.startTimeout)
	defer cancel()
	if err := c.assignSlots(ctx); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if err := c.meet(ctx, 0); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if err := c.waitReady(ctx, t.Logf); err != nil {
		t.Fatalf("redistest: cluster did not converge within %v: %v\n%s", 2*cfg.startTimeout, err, c.nodesReport())
	}
	for i, r := range c.Replicas {
		id, err := c.ID(ctx, c.Nodes[i])
		if err == nil {
			err = r.Client().Do(ctx, "CLUSTER", "REPLICATE", id).Err()
		}
		if err != nil {
			t.Fatalf("redistest: replica %s of %s: %v\n%s", r.Addr, c.Nodes[i].Addr, err, c.nodesReport())
		}
	}
	if err := c.awaitReplication(ctx); err != nil {
		t.Fatalf("redistest: replicas not in sync within %v: %v\n%s", 2*cfg.startTimeout, err, c.nodesReport())
	}
	return c
}

// The machine-wide lock of StartClusterWithReplicas, shared by the tests
// of one process (a retried test starts a second cluster before its
// first one's cleanup).
var (
	lockMu   sync.Mutex
	lockFile *os.File
	lockRefs int
)

// exclusive holds the machine-wide lock of StartClusterWithReplicas until
// t's cleanup.
func exclusive(t testing.TB) {
	t.Helper()
	lockMu.Lock()
	defer lockMu.Unlock()
	if lockRefs == 0 {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "flowgate-redistest-replicas.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatalf("redistest: lock file: %v", err)
		}
		if err := flock(f); err != nil {
			f.Close()
			t.Fatalf("redistest: lock %s: %v", f.Name(), err)
		}
		lockFile = f
	}
	lockRefs++
	t.Cleanup(func() {
		lockMu.Lock()
		defer lockMu.Unlock()
		if lockRefs--; lockRefs == 0 {
			lockFile.Close() // closing the file releases the lock
			lockFile = nil
		}
	})
}

// awaitReplication polls until every replica's link is up and every node
// lists each replica under its primary.
func (c *Cluster) awaitReplication(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		lag := c.replicationLag(ctx)
		if lag == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s", lag)
		case <-tick.C:
		}
	}
}

func (c *Cluster) replicationLag(ctx context.Context) string {
	for _, r := range c.Replicas {
		info, err := r.Client().Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Sprintf("replica %s: INFO: %v", r.Addr, err)
		}
		if got := parseInfo(info)["master_link_status"]; got != "up" {
			return fmt.Sprintf("replica %s: master_link_status:%s", r.Addr, got)
		}
	}
	for _, n := range c.all() {
		out, err := n.Client().ClusterNodes(ctx).Result()
		if err != nil {
			return fmt.Sprintf("node %s: CLUSTER NODES: %v", n.Addr, err)
		}
		if got := countReplicas(out); got != len(c.Replicas) {
			return fmt.Sprintf("node %s: sees %d replicas, want %d", n.Addr, got, len(c.Replicas))
		}
	}
	return ""
}

// countReplicas counts the lines of a CLUSTER NODES reply flagged slave.
func countReplicas(nodes string) int {
	n := 0
	for line := range strings.Lines(nodes) {
		if f := strings.Fields(line); len(f) > 2 && slices.Contains(strings.Split(f[2], ","), "slave") {
			n++
		}
	}
	return n
}

// ID returns n's cluster node id (CLUSTER MYID).
func (c *Cluster) ID(ctx context.Context, n *Server) (string, error) {
	id, err := n.Client().Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return "", fmt.Errorf("node %s: CLUSTER MYID: %w", n.Addr, err)
	}
	return id, nil
}

// AwaitPrimary polls n's ROLE every 5ms until it is a primary (a replica
// promoted after its primary failed, or by CLUSTER FAILOVER) and returns
// the time it first saw it so.
func AwaitPrimary(ctx context.Context, n *Server) (time.Time, error) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		role, err := n.Client().Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("node %s: still not a primary (role %v, %v): %w", n.Addr, role, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// MoveSlots migrates slots lo..hi with their keys from primary from to
// primary to, as redis-cli --cluster reshard does (IMPORTING, MIGRATING,
// MIGRATE of each key, then SETSLOT NODE on both), while clients keep
// running: they are sent ASK and MOVED meanwhile.
func (c *Cluster) MoveSlots(ctx context.Context, lo, hi int, from, to *Server) error {
	src, err := c.ID(ctx, from)
	if err != nil {
		return err
	}
	dst, err := c.ID(ctx, to)
	if err != nil {
		return err
	}
	for slot := lo; slot <= hi; slot++ {
		if err := c.moveSlot(ctx, slot, from, to, src, dst); err != nil {
			return fmt.Errorf("slot %d from %s to %s: %w", slot, from.Addr, to.Addr, err)
		}
	}
	return nil
}

func (c *Cluster) moveSlot(ctx context.Context, slot int, from, to *Server, src, dst string) error {
	fc, tc := from.Client(), to.Client()
	if err := tc.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", src).Err(); err != nil {
		return err
	}
	if err := fc.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst).Err(); err != nil {
		return err
	}
	for {
		keys, err := fc.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", "127.0.0.1", strconv.Itoa(to.Port), "", 0, 5000, "REPLACE", "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := fc.Do(ctx, args...).Err(); err != nil {
			return err
		}
	}
	for _, n := range []*Server{to, from} {
		if err := n.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dst).Err(); err != nil {
			return err
		}
	}
	return nil
}
