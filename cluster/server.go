package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/redis/go-redis/v9"
)

// RedisTokenServer decides flow's cluster rules in Redis: one Lua call per
// Entry and level, atomic over all the rules of that level and key. It is
// safe for concurrent use; Close stops its background loop.
type RedisTokenServer struct {
	conn *conn     // the client as built (see ownClient)
	box  clientBox // the client in use: conn's, or a fresh one the prober built
	cf   config

	seq       atomic.Uint64
	instances atomic.Int64 // the count the local fallback divides by (instanceTrust)
	live      atomic.Int64 // the count the last heartbeat read: per_instance thresholds
	nodes     nodeSet      // a breaker per Redis node (nodes.go)
	st        stats
	plans     sync.Map // *flow.Rule (first rule of a request) -> *plan
	nplans    atomic.Int64
	argPool   sync.Pool
	held      heldLeases
	leases    *leaseTable // nil without WithLeasing
	loads     scriptLoads
	trust     instanceTrust

	bg            context.Context // background calls; cancelled by Close
	bgCancel      context.CancelFunc
	stop          chan struct{}
	done          chan struct{}
	probersMu     sync.Mutex
	probersClosed bool
	probers       sync.WaitGroup // one prober per node whose breaker is open
	closeOnce     sync.Once
}

var _ flow.TokenServer = (*RedisTokenServer)(nil)

// NewRedisTokenServer returns a token server on rdb. It announces this
// instance with a first heartbeat (a failure there is not fatal: Redis may
// come up later) and starts the background goroutines that Close stops.
//
// Every decision returns within the per-call timeout (WithTimeout) and is
// never sent twice, whatever rdb's settings: from a *redis.Client or a
// *redis.ClusterClient the server builds a client of its own with rdb's
// options (address, auth, TLS, pool size, dialer) and safe overrides
// (ContextTimeoutEnabled, MaxRetries -1, one dial attempt, pool waits
// bounded by the timeout), which Close closes; hooks added to rdb with
// AddHook do not carry over. A failover client (NewFailoverClient) or a
// Ring is used as given and must have ContextTimeoutEnabled, or this
// returns an error naming it. The server re-sends a call only after
// NOSCRIPT, which means Redis did not run it.
func NewRedisTokenServer(rdb redis.UniversalClient, opts ...Option) (*RedisTokenServer, error) {
	if rdb == nil {
		return nil, errors.New("cluster: nil redis client")
	}
	cf := defaults()
	for _, o := range opts {
		if o != nil {
			o(&cf)
		}
	}
	if cf.id == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("cluster: instance id: %w", err)
		}
		cf.id = hex.EncodeToString(b[:])
	}
	if strings.ContainsAny(cf.id, ":{}") {
		return nil, fmt.Errorf("cluster: instance id %q: must not contain ':', '{' or '}'", cf.id)
	}
	c, err := ownClient(rdb, cf.Timeout)
	if err != nil {
		return nil, err
	}
	s := &RedisTokenServer{conn: c, cf: cf, stop: make(chan struct{}), done: make(chan struct{})}
	s.box.set(c.rdb)
	s.bg, s.bgCancel = context.WithCancel(context.Background())
	s.instances.Store(1)
	s.live.Store(1)
	s.nodes.init(c.rdb, cf.Failures, int64(cf.OpenFor), int64(cf.Timeout))
	s.held.init()
	if cf.leasing != nil {
		s.leases = newLeaseTable(s, *cf.leasing)
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(cf.Timeout, 250*time.Millisecond))
	if _, err := s.Heartbeat(ctx); err != nil {
		s.logWarn("cluster: first heartbeat", err)
	}
	cancel()
	go s.loop()
	return s, nil
}

// client is the Redis client calls go through now.
func (s *RedisTokenServer) client() redis.UniversalClient { return s.box.get() }

// Instances is the live-instance count the engine's local fallback divides
// a "global" limit by (>= 1): the heartbeats' count, except that a drop is
// believed only once it has lasted a heartbeat TTL (see instanceTrust), so
// a heartbeat set emptied by a restart or FLUSHALL, or an instance that
// missed its beats during an outage, never enlarges a share.
func (s *RedisTokenServer) Instances() int { return int(max(1, s.instances.Load())) }

// liveInstances is the count the last heartbeat read (>= 1). A
// per_instance threshold multiplies by it: read low (a flush, a late
// beat), it refuses a little more for a moment instead of admitting more.
func (s *RedisTokenServer) liveInstances() int { return int(max(1, s.live.Load())) }

// ID is this instance's id.
func (s *RedisTokenServer) ID() string { return s.cf.id }

func (s *RedisTokenServer) now() int64 { return clock.Nanotime(s.cf.Clock) }

// newNonce returns a string unique to one call among all instances.
func (s *RedisTokenServer) newNonce() string {
	return s.cf.id + ":" + strconv.FormatUint(s.seq.Add(1), 10)
}

// unavailable wraps err so the engine applies the rules' fallback.
func unavailable(op string, err error) error {
	return fmt.Errorf("cluster: %s: %w: %w", op, flow.ErrTokenServerUnavailable, err)
}

var errBreakerOpen = errors.New("circuit breaker open")

// Acquire decides every rule of req in one script call (or from a lease).
func (s *RedisTokenServer) Acquire(ctx context.Context, req flow.TokenRequest) (flow.TokenResult, error) {
	if len(req.Rules) == 0 {
		return flow.TokenResult{Allowed: true, Refused: -1}, nil
	}
	if req.Tokens <= 0 {
		return flow.TokenResult{}, fmt.Errorf("cluster: tokens: %d must be > 0", req.Tokens)
	}
	p, err := s.plan(&req)
	if err != nil {
		return flow.TokenResult{}, err
	}
	var stripe int
	if len(p.stripes) > 0 { // round-robin: see stripe.go
		stripe = int((p.rr.Add(1) - 1) % uint64(len(p.stripes)))
		p = p.stripes[stripe]
	}
	if int64(req.Tokens) > p.most {
		// More than a rule (or its stripe) can ever grant: refused for
		// good, before a lease or Redis takes anything (the scripts
		// refuse it too).
		return flow.TokenResult{Refused: p.mostAt, RetryAfter: flow.Never, Stripe: stripe}, nil
	}
	if s.leases != nil && p.leasable {
		res, err := s.leases.acquire(ctx, p, &req)
		res.Stripe = stripe
		return res, err
	}
	var nonce any = ""
	var lease string
	if p.nonce {
		lease = s.newNonce()
		nonce = lease
	}
	r, err := s.call(ctx, mainAcquire, p, req.Key, nonce, req.Tokens, 6, nil)
	if err != nil {
		return flow.TokenResult{}, err
	}
	res := flow.TokenResult{Allowed: r.allowed, Refused: r.refused, Remaining: float64(r.remaining), Wait: r.wait, RetryAfter: r.retryAfter(), Stripe: stripe, At: r.at}
	if r.allowed && len(p.conc) > 0 {
		res.Lease = lease
		s.held.add(res.Lease, p, req.Key, req.Tokens)
	}
	return res, nil
}

// Release undoes what res took, as req.Refund says (see flow.TokenServer):
//   - a refund (a later level refused the call) gives back every rule's
//     permits in one script call: rate tokens and, when res.Lease is set,
//     that call's concurrency permits and sliding-log entries by name;
//   - otherwise (Exit) only the concurrency permits of res.Lease are
//     released; rate tokens stay spent, so without a lease there is nothing
//     to do;
//   - unless req.Settle: then, in the same call, every rule that can carry
//     it is settled at the call's actual cost, against the lease first for
//     a leased rule set (see settle.go and docs/cost.md).
func (s *RedisTokenServer) Release(ctx context.Context, req flow.TokenRequest, res flow.TokenResult) error {
	if len(req.Rules) == 0 || req.Tokens <= 0 || !res.Allowed {
		return nil
	}
	settle := req.Settle && !req.Refund
	if !req.Refund && res.Lease == "" && !settle {
		return nil
	}
	p, err := s.plan(&req)
	if err != nil {
		return err
	}
	if len(p.stripes) > 0 { // back to the stripe the permits came from
		if res.Stripe < 0 || res.Stripe >= len(p.stripes) {
			return fmt.Errorf("cluster: release: stripe %d of %d", res.Stripe, len(p.stripes))
		}
		p = p.stripes[res.Stripe]
	}
	if settle {
		return s.settle(ctx, p, &req, res)
	}
	if req.Refund && res.Lease == "" && s.leases != nil && p.leasable && s.leases.giveBack(p, req.Key, req.Tokens) {
		return nil
	}
	var only []int
	var nonce any = ""
	if res.Lease != "" {
		if len(p.conc) == 0 {
			return fmt.Errorf("cluster: release: lease %q for rules without concurrency", res.Lease)
		}
		nonce = res.Lease
		if !req.Refund {
			only = p.conc
		}
		// Stop renewing first: if the release fails, the permits run out
		// after the lease TTL instead of being held forever.
		s.held.remove(res.Lease)
	}
	_, err = s.call(ctx, mainRelease, p, req.Key, nonce, req.Tokens, 0, only)
	return err
}

// plan returns the cached plan for req's rules, factor and instance count.
func (s *RedisTokenServer) plan(req *flow.TokenRequest) (*plan, error) {
	n := s.liveInstances()
	if v, ok := s.plans.Load(req.Rules[0]); ok {
		if p := v.(*plan); p.matches(req, n) && (req.Key != "") == (p.global == nil) {
			return p, nil
		}
	}
	p, err := newPlan(s.cf.prefix, req, n, s.cf.concTTL.Microseconds())
	if err != nil {
		return nil, err
	}
	// Old rule sets stay until the cache is full: then it starts over.
	if s.nplans.Add(1) > int64(s.cf.maxPlanCache) {
		s.plans.Clear()
		s.nplans.Store(1)
	}
	s.plans.Store(req.Rules[0], p)
	return p, nil
}
