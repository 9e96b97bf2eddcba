package redistest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Slots is the number of hash slots in a Redis Cluster.
const Slots = 16384

// clusterSize is the number of primaries StartCluster runs, the fewest Redis
// Cluster accepts as a real cluster (redis-cli --cluster create requires 3).
const clusterSize = 3

// Cluster is a 3-primary Redis Cluster owned by a test, without replicas.
// Node i serves the slots SlotRange(i) returns. Killing a node leaves its
// slots uncovered: its keys fail at once (connection refused), and with the
// default cluster-require-full-coverage yes the remaining nodes refuse every
// key once they agree it failed, about 4s later (measured) with the 2s
// cluster-node-timeout this package sets; WithConfig can change either.
type Cluster struct {
	Addrs []string  // the nodes' "127.0.0.1:port" addresses, in node order
	Nodes []*Server // node i serves SlotRange(i)
	// Replicas[i] replicates Nodes[i] (StartClusterWithReplicas only; empty
	// otherwise). A replica's address is not in Addrs: clients find it
	// through CLUSTER SLOTS, as a user's would.
	Replicas []*Server

	mu      sync.Mutex
	client  *redis.ClusterClient
	clients []*redis.ClusterClient
}

// StartCluster runs three cluster-enabled redis-servers on free loopback
// ports (each with port+10000 free for the cluster bus), assigns each a third
// of the slots, joins them with CLUSTER MEET and returns once every node
// reports cluster_state:ok with all 16384 slots assigned and all three nodes
// known. Skipping, options and cleanup are as for Start.
func StartCluster(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	cfg := newConfig(opts)
	cfg.bus = true
	c := startNodes(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.startTimeout)
	defer cancel()
	if err := c.assignSlots(ctx); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if err := c.meet(ctx, 0); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if err := c.waitReady(ctx, t.Logf); err != nil {
		t.Fatalf("redistest: cluster did not converge within %v: %v\n%s", cfg.startTimeout, err, c.nodesReport())
	}
	return c
}

// startNodes starts the cluster-enabled servers, not yet joined.
func startNodes(t testing.TB, cfg config) *Cluster {
	t.Helper()
	c := &Cluster{}
	for range clusterSize {
		n := start(t, cfg)
		c.Nodes = append(c.Nodes, n)
		c.Addrs = append(c.Addrs, n.Addr)
	}
	// Registered after the nodes' cleanups, so it runs before them.
	t.Cleanup(c.cleanup)
	return c
}

// assignSlots gives node i the slots of SlotRange(i) and config epoch i+1.
func (c *Cluster) assignSlots(ctx context.Context) error {
	for i, n := range c.Nodes {
		cl := n.Client()
		// Distinct epochs up front spare the nodes resolving a collision
		// between three epoch-0 primaries, as redis-cli --cluster create does.
		if err := cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("node %s: CLUSTER SET-CONFIG-EPOCH: %w", n.Addr, err)
		}
		lo, hi := SlotRange(i)
		if err := cl.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("node %s: CLUSTER ADDSLOTSRANGE %d %d: %w", n.Addr, lo, hi, err)
		}
	}
	return nil
}

// WaitHealthy waits until every node again reports the whole cluster, for
// example after Restart of a node, which rejoins with its old id and slots
// from nodes.conf but, as a primary, reports cluster_state:ok only 2s after
// it starts (Redis's writable delay). It fails t after 10s.
func (c *Cluster) WaitHealthy(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), c.Nodes[0].cfg.startTimeout)
	defer cancel()
	if err := c.waitReady(ctx, t.Logf); err != nil {
		t.Fatalf("redistest: cluster not healthy within %v: %v\n%s", c.Nodes[0].cfg.startTimeout, err, c.nodesReport())
	}
}

// SlotRange returns the first and last slot node i of a Cluster serves:
// 0–5460, 5461–10922 and 10923–16383, the split redis-cli makes.
func SlotRange(i int) (lo, hi int) {
	return roundedShare(i), roundedShare(i+1) - 1
}

// roundedShare is i*Slots/clusterSize rounded to the nearest integer.
func roundedShare(i int) int { return (2*i*Slots + clusterSize) / (2 * clusterSize) }

// meet has node i send CLUSTER MEET to every other node. Meeting a node
// already known is harmless: the handshake finds the same id and is dropped.
func (c *Cluster) meet(ctx context.Context, i int) error {
	all := c.all()
	for j, n := range all {
		if j == i {
			continue
		}
		if err := all[i].Client().ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(n.Port)).Err(); err != nil {
			return fmt.Errorf("node %s: CLUSTER MEET %s: %w", all[i].Addr, n.Addr, err)
		}
	}
	return nil
}

// all returns the primaries, then the replicas.
func (c *Cluster) all() []*Server {
	return append(append([]*Server(nil), c.Nodes...), c.Replicas...)
}

// rejoinAfter is how long a node may know fewer than all nodes before it
// sends its own MEETs. A handshake that does not finish within the node
// timeout (1s minimum) is dropped for good, and on a loaded machine the
// receiving side's half can be: it then ignores the sender's PINGs forever,
// so the first MEET alone can leave a node isolated.
const rejoinAfter = time.Second

// waitReady polls CLUSTER INFO on every node until all agree the cluster is
// whole, re-sending MEETs from any node still missing peers. It returns the
// last disagreement when ctx ends.
func (c *Cluster) waitReady(ctx context.Context, logf func(format string, args ...any)) error {
	// Gossip runs on each node's 100ms cluster cron; there is no event to
	// wait on, so poll a little faster than that.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	all := c.all()
	lastMeet := make([]time.Time, len(all))
	for i := range lastMeet {
		lastMeet[i] = time.Now()
	}
	var lag string // the first disagreement of the latest complete poll
	for {
		// Every node is polled each round, so a lonely node late in the
		// list gets its re-MEET even while an earlier one is still lagging.
		first := ""
		for i, n := range all {
			info, err := n.Client().ClusterInfo(ctx).Result()
			if ctx.Err() != nil {
				first = lag // cut short: keep the last real disagreement
				break
			}
			if err != nil {
				first = cmp.Or(first, fmt.Sprintf("node %s: CLUSTER INFO: %v", n.Addr, err))
				continue
			}
			got := parseInfo(info)
			if got["cluster_known_nodes"] != strconv.Itoa(len(all)) && time.Since(lastMeet[i]) >= rejoinAfter {
				logf("redistest: node %s knows %s of %d nodes after %v; it sends MEET again",
					n.Addr, got["cluster_known_nodes"], len(all), time.Since(lastMeet[i]).Round(time.Millisecond))
				_ = c.meet(ctx, i) // a failure shows up as lag on the next poll
				lastMeet[i] = time.Now()
			}
			if l := infoLag(got, len(all)); l != "" {
				first = cmp.Or(first, fmt.Sprintf("node %s: %s", n.Addr, l))
			}
		}
		if first == "" && ctx.Err() == nil {
			return nil
		}
		lag = first
		select {
		case <-ctx.Done():
			if lag == "" {
				return ctx.Err()
			}
			return errors.New(lag)
		case <-tick.C:
		}
	}
}

// infoLag returns "" when CLUSTER INFO shows a whole cluster as this node
// sees it, else the first field that differs.
func infoLag(got map[string]string, known int) string {
	for _, kv := range [][2]string{
		{"cluster_known_nodes", strconv.Itoa(known)},
		{"cluster_slots_assigned", strconv.Itoa(Slots)},
		{"cluster_slots_ok", strconv.Itoa(Slots)},
		{"cluster_state", "ok"},
	} {
		if got[kv[0]] != kv[1] {
			return fmt.Sprintf("%s:%s, want %s", kv[0], got[kv[0]], kv[1])
		}
	}
	return ""
}

// nodesReport returns every node's CLUSTER NODES, for a failure message.
func (c *Cluster) nodesReport() string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var b strings.Builder
	for _, n := range c.all() {
		out, err := n.Client().ClusterNodes(ctx).Result()
		if err != nil {
			out = err.Error()
		}
		fmt.Fprintf(&b, "CLUSTER NODES on %s:\n%s\n", n.Addr, strings.TrimSpace(out))
	}
	return b.String()
}

// parseInfo reads the "key:value" lines of an INFO-style reply.
func parseInfo(s string) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(s) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// ClusterOptions returns fresh go-redis cluster options for this cluster,
// with the same fast-failure settings as Server.ClientOptions.
func (c *Cluster) ClusterOptions() *redis.ClusterOptions {
	o := c.Nodes[0].ClientOptions()
	return &redis.ClusterOptions{
		Addrs:                 append([]string(nil), c.Addrs...),
		DialTimeout:           o.DialTimeout,
		DialerRetries:         o.DialerRetries,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,
		DisableIdentity:       o.DisableIdentity,
	}
}

// Client returns the Cluster's shared client, made from ClusterOptions and
// closed in t.Cleanup.
func (c *Cluster) Client() *redis.ClusterClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil {
		c.client = redis.NewClusterClient(c.ClusterOptions())
		c.clients = append(c.clients, c.client)
	}
	return c.client
}

// NewClient returns a new cluster client with opts, closed in t.Cleanup.
// Empty opts.Addrs means this cluster's Addrs; nil opts means ClusterOptions.
func (c *Cluster) NewClient(opts *redis.ClusterOptions) *redis.ClusterClient {
	if opts == nil {
		opts = c.ClusterOptions()
	}
	o := *opts
	if len(o.Addrs) == 0 {
		o.Addrs = append([]string(nil), c.Addrs...)
	}
	cl := redis.NewClusterClient(&o)
	c.mu.Lock()
	c.clients = append(c.clients, cl)
	c.mu.Unlock()
	return cl
}

// NodeFor returns the node that serves key, by the slot assignment
// StartCluster made (a test that migrates slots must track them itself).
func (c *Cluster) NodeFor(key string) *Server {
	slot := KeySlot(key)
	for i, n := range c.Nodes {
		if lo, hi := SlotRange(i); slot >= lo && slot <= hi {
			return n
		}
	}
	panic("redistest: slot " + strconv.Itoa(slot) + " outside every range") // SlotRange covers 0..16383
}

func (c *Cluster) cleanup() {
	c.mu.Lock()
	clients := c.clients
	c.clients, c.client = nil, nil
	c.mu.Unlock()
	for _, cl := range clients {
		_ = cl.Close()
	}
}

// KeySlot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key, or of its {hash tag} when the first '{' has a later '}' with
// something between, modulo 16384 (Redis Cluster specification).
func KeySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key) % Slots)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), bit by bit:
// tests hash a handful of keys, so a table is not worth its size.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
