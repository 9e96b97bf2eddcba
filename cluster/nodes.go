package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/flowgate/flowgate/cluster/internal/guard"
	"github.com/redis/go-redis/v9"
)

// Failure is tracked per Redis node.
//
// On Redis Cluster a decision's keys share one {hash tag}, so they live
// in one slot, on the master that owns it. Each master has its own
// breaker, its own prober and its own outage log: a dead master fails
// the calls on its slots (they follow their rules' fallback) and nothing
// else; calls on the other masters' slots are decided by Redis all along.
// The slot's owner is read from the cluster client's slot map
// (MasterForKey). When a replica is promoted, a failover or a reshard
// moves the slots, the map names another node once it is reloaded (the
// prober of the dead node asks for that every probeEvery), and the calls
// on those slots go to the new owner's breaker, closed, at once.
//
// From any other client (one *redis.Client, a failover client, a Ring)
// the server has one node: every call shares one breaker, as a single
// Redis is one failure domain.

// node is one Redis server's failure state.
type node struct {
	addr string
	// client is the node's own client (cluster only): probes and script
	// loads go to it alone. nil: use the server's client.
	client atomic.Pointer[redis.Client]
	br     guard.Breaker
	// sample is a key of a slot the node held when its breaker opened: the
	// prober asks the slot map whether the node still owns it.
	sample atomic.Pointer[string]
	// rejected and failed count the calls failed fast, and the calls
	// failed at Redis, on this node, for its outage log.
	rejected, failed atomic.Uint64
	probing          atomic.Bool // a prober runs for this node
}

// nodeSet maps a decision's keys to their node.
type nodeSet struct {
	cc  *redis.ClusterClient // nil: a single server, the node one
	one *node                // the single server; with cc, calls made while no slot map is known
	// failures, openFor and span are each breaker's settings.
	failures      int
	openFor, span int64

	byClient sync.Map // *redis.Client (a node of cc) -> *node
	mu       sync.Mutex
	byAddr   map[string]*node // under mu; every node seen, for OpenNodes
}

func (ns *nodeSet) init(rdb redis.UniversalClient, failures int, openFor, span int64) {
	ns.failures, ns.openFor, ns.span = failures, openFor, span
	ns.byAddr = map[string]*node{}
	addr := "redis"
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		ns.cc, addr = c, "cluster"
	case *redis.Client:
		addr = c.Options().Addr
	}
	ns.one = ns.newNode(addr)
}

func (ns *nodeSet) newNode(addr string) *node {
	n := &node{addr: addr}
	n.br.Init(ns.failures, ns.openFor, ns.span)
	ns.byAddr[addr] = n
	return n
}

// nodeFor returns the node that holds key: for a cluster, the master of
// its slot in the client's slot map (no I/O once the map is loaded).
func (ns *nodeSet) nodeFor(ctx context.Context, key string) *node {
	if ns.cc == nil || key == "" {
		return ns.one
	}
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := ns.cc.MasterForKey(ctx, key)
	if err != nil {
		return ns.one // no slot map at all: the cluster as a whole is unreachable
	}
	if v, ok := ns.byClient.Load(c); ok {
		return v.(*node)
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	addr := c.Options().Addr
	n := ns.byAddr[addr]
	if n == nil {
		n = ns.newNode(addr)
	}
	n.client.Store(c)
	ns.byClient.Store(c, n)
	return n
}

// othersUp reports whether some node other than n has a closed breaker:
// n's failure is then partial, confined to its slots.
func (ns *nodeSet) othersUp(n *node) bool {
	if ns.cc == nil {
		return false
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	for _, o := range ns.byAddr {
		if o != n && o != ns.one && !o.br.Open() {
			return true
		}
	}
	return false
}

// anyOpen reports whether some node's breaker is open.
func (ns *nodeSet) anyOpen() bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	for _, n := range ns.byAddr {
		if n.br.Open() {
			return true
		}
	}
	return false
}

// open returns the addresses of the nodes whose breaker is open.
func (ns *nodeSet) open() []string {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var out []string
	for a, n := range ns.byAddr {
		if n.br.Open() {
			out = append(out, a)
		}
	}
	return out
}

// NodeError is the failure of a decision whose Redis node did not answer
// (or whose breaker is open). It wraps the cause and, through the error
// returned by Acquire, flow.ErrTokenServerUnavailable, so the engine
// applies the rules' fallback.
type NodeError struct {
	Addr string // the node ("host:port"); "cluster" when no slot map could be read
	// Partial: other nodes of the same cluster answer; only the decisions
	// whose keys live on Addr fail.
	Partial bool
	Err     error
}

// Error says which node failed and how: "redis node ADDR: ERR".
func (e *NodeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redis node %s", e.Addr)
	if e.Partial {
		b.WriteString(" (other nodes answer)")
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the cause.
func (e *NodeError) Unwrap() error { return e.Err }

// PartialOutage reports whether the failure is confined to this node's
// slots. Packages that must not import this one (the token service
// replies) read it through an interface with errors.As.
func (e *NodeError) PartialOutage() bool { return e.Partial }

// nodeDown is the error of a call on n that failed with err.
func (s *RedisTokenServer) nodeDown(op string, n *node, err error) error {
	return unavailable(op, &NodeError{Addr: n.addr, Partial: s.nodes.othersUp(n), Err: err})
}

// OpenNodes returns the addresses of the Redis nodes whose breaker is
// open now (calls on their slots fail fast and follow their rules'
// fallback), in no particular order.
func (s *RedisTokenServer) OpenNodes() []string { return s.nodes.open() }
