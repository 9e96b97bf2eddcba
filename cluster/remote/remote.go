package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/cluster/internal/guard"
	"github.com/flowgate/flowgate/cluster/internal/wire"
	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// TokenServer is a flow.TokenServer that asks `flowgate serve`
// replicas (package tokenrpc) instead of Redis. To the engine it is the
// embedded cluster.RedisTokenServer, slower by one hop: the same results, the same
// per-call timeout (20ms by default) and the same breaker, per replica.
//
// Failover: a call goes to the preferred replica if its connection is
// ready and its breaker closed, else to the next such replica (and only
// when none is ready, to one still connecting). A call handed to gRPC is
// never sent again elsewhere, whatever its error: codes.Unavailable can
// come after the request left (a connection reset mid-call), and an
// Acquire applied twice double-counts. gRPC already retries, by itself,
// calls that provably never reached a server. So a replica dying costs the
// calls in flight on it (they fail with flow.ErrTokenServerUnavailable and
// the engine applies each rule's fallback) and nothing after: the dead
// connection is no longer ready, and calls go to the next replica.
// Releases of a concurrency lease on Exit are idempotent and are retried
// on the next replica; refunds and settlements are not.
//
// It holds one grpc.ClientConn per replica for its life; Close closes
// them.
//
// Thresholds: the replicas decide, so a "per_instance" rule is multiplied
// by the number of live replicas (their heartbeats), not of clients; use
// "global" rules through the service. Instances, which the engine's
// "local" fallback divides by, is what WithInstances says.
type TokenServer struct {
	cf       config
	replicas []*replica
	pref     atomic.Uint32 // index of the preferred replica
	st       guard.Counters
	wire     sync.Map // *flow.Rule (first of a request) -> *ruleSet
	nwire    atomic.Int64

	closeOnce sync.Once
	closeErr  error
}

type replica struct {
	addr   string
	cc     *grpc.ClientConn
	client tokenpb.TokenServiceClient
	br     guard.Breaker
}

// ruleSet is a rule set in wire form, built once per rule set.
type ruleSet struct {
	first *flow.Rule
	n     int
	ids   []string
	rules []*tokenpb.Rule
}

// ReplicaError is a replica's answer that is not a decision: the status
// and the server's reason. Busy (TOO_MANY_REQUEST) and FAIL wrap
// flow.ErrTokenServerUnavailable as well.
type ReplicaError struct {
	Addr    string         // the replica that answered ("host:port", as given to New)
	Status  tokenpb.Status // its status: not OK, BLOCKED or SHOULD_WAIT, which are decisions
	Message string         // the replica's reason, as it sent it (may be empty)
	// Partial (FAIL only): the replica's backend failed for this request's
	// keys alone (one Redis Cluster node); it answers for others, so its
	// breaker stays closed.
	Partial bool
}

// Error says which replica answered what, and why:
// "cluster: replica ADDR: STATUS: MESSAGE".
func (e *ReplicaError) Error() string {
	return fmt.Sprintf("cluster: replica %s: %v: %s", e.Addr, e.Status, e.Message)
}

var (
	_ flow.TokenServer = (*TokenServer)(nil)

	errNotReady = errors.New("no replica ready")
)

// New returns a client of the token service replicas at
// addrs ("host:port"). It dials lazily: an unreachable replica is not an
// error here, only in the calls that would need it.
func New(addrs []string, opts ...Option) (*TokenServer, error) {
	if len(addrs) == 0 {
		return nil, errors.New("cluster: remote: no replica addresses")
	}
	cf := defaults()
	for _, o := range opts {
		if o != nil {
			o(&cf)
		}
	}
	creds := insecure.NewCredentials()
	if cf.tls != nil {
		creds = credentials.NewTLS(cf.tls)
	}
	dial := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if cf.token != "" {
		dial = append(dial, grpc.WithPerRPCCredentials(bearer(cf.token)))
	}
	dial = append(dial, cf.dialOpts...)
	s := &TokenServer{cf: cf}
	var errs []error
	for i, a := range addrs {
		cc, err := grpc.NewClient(a, dial...)
		if err != nil {
			errs = append(errs, fmt.Errorf("addrs[%d] %q: %w", i, a, err))
			continue
		}
		r := &replica{addr: a, cc: cc, client: tokenpb.NewTokenServiceClient(cc)}
		// Timeouts count as the Redis server's breaker counts them (see
		// guard.Breaker): a streak must last the timeout, and a timeout
		// seen late (this process starved) or while other calls to the
		// replica were answered is not held against it.
		r.br.Init(cf.Failures, int64(cf.OpenFor), int64(cf.Timeout))
		s.replicas = append(s.replicas, r)
	}
	if err := errors.Join(errs...); err != nil {
		s.Close()
		return nil, fmt.Errorf("cluster: remote: %w", err)
	}
	// Clients start at a random replica, so they spread over the replicas.
	s.pref.Store(uint32(rand.IntN(len(s.replicas))))
	for _, r := range s.replicas {
		r.cc.Connect() // start dialing now, so the first call finds a ready connection
	}
	return s, nil
}

// Instances is the WithInstances count (>= 1).
func (s *TokenServer) Instances() int { return s.cf.instances }

func (s *TokenServer) now() int64 { return clock.Nanotime(s.cf.Clock) }

// Acquire asks one replica to decide every rule of req.
func (s *TokenServer) Acquire(ctx context.Context, req flow.TokenRequest) (flow.TokenResult, error) {
	if len(req.Rules) == 0 {
		return flow.TokenResult{Allowed: true, Refused: -1}, nil
	}
	if req.Tokens <= 0 {
		return flow.TokenResult{}, fmt.Errorf("cluster: tokens: %d must be > 0", req.Tokens)
	}
	in := s.request(&req)
	var out *tokenpb.AcquireResponse
	_, err := s.once(ctx, func(ctx context.Context, r *replica) (err error) {
		out, err = r.client.Acquire(ctx, in)
		if err != nil {
			return err
		}
		switch st := out.GetStatus(); st {
		case tokenpb.Status_STATUS_OK, tokenpb.Status_STATUS_SHOULD_WAIT:
		case tokenpb.Status_STATUS_BLOCKED:
			if i := out.GetRefused(); i < 0 || int(i) >= len(req.Rules) {
				return s.answerError(r, st, fmt.Sprintf("refused rule index %d out of range", i), false)
			}
		default:
			return s.answerError(r, st, out.GetMessage(), out.GetPartial())
		}
		return nil
	})
	if err != nil {
		return flow.TokenResult{}, err
	}
	res := flow.TokenResult{Refused: -1, Remaining: out.GetRemaining(), RetryAfter: time.Duration(out.GetRetryAfterNanos()),
		Wait: time.Duration(out.GetWaitNanos()), Lease: out.GetLease(), At: out.GetCountedAt(), Stripe: int(out.GetStripe())}
	if out.GetStatus() == tokenpb.Status_STATUS_BLOCKED {
		res.Refused = int(out.GetRefused())
		s.st.Blocked.Add(1)
	} else {
		res.Allowed = true
		s.st.Passed.Add(1)
	}
	return res, nil
}

// Release gives back what res took, as cluster.RedisTokenServer.Release does:
// req.Refund travels with the lease, so the replica knows a refund from an
// Exit. With req.Settle (an Exit with flow.WithActualCost) it calls the
// replica's Settle method instead, which settles and releases in one call;
// a replica that predates it answers UNIMPLEMENTED, and the call's cost
// stays as reserved (the error says so).
func (s *TokenServer) Release(ctx context.Context, req flow.TokenRequest, res flow.TokenResult) error {
	if len(req.Rules) == 0 || req.Tokens <= 0 || !res.Allowed {
		return nil
	}
	settle := req.Settle && !req.Refund
	if !req.Refund && res.Lease == "" && !settle {
		return nil // Exit with nothing held: rate tokens stay spent
	}
	in := &tokenpb.ReleaseRequest{Request: s.request(&req), Lease: res.Lease, Refund: req.Refund,
		CountedAt: res.At, Stripe: int32(res.Stripe)}
	method := r2Release
	if settle {
		in.Settle, in.ActualCost, method = true, int64(max(req.Actual, 0)), r2Settle
	}
	call := func(ctx context.Context, r *replica) error {
		out, err := method(ctx, r.client, in)
		if status.Code(err) == codes.Unimplemented {
			// It answered: a replica that predates Settle. Not held
			// against it.
			return s.answerError(r, tokenpb.Status_STATUS_BAD_REQUEST, "settle not served: "+err.Error(), false)
		}
		if err == nil && out.GetStatus() != tokenpb.Status_STATUS_OK {
			return s.answerError(r, out.GetStatus(), out.GetMessage(), out.GetPartial())
		}
		return err
	}
	_, err := s.once(ctx, call)
	if err != nil && !req.Refund && !settle && errors.Is(err, flow.ErrTokenServerUnavailable) {
		// Removing a lease twice removes it once: safe to try elsewhere. A
		// refund or a settlement is not (it would count twice).
		_, err = s.once(ctx, call)
	}
	if err != nil && s.cf.log != nil {
		s.cf.log.Warn("cluster: remote release", slog.Any("err", err))
	}
	return err
}

// r2Release and r2Settle call a replica's Release and Settle methods.
func r2Release(ctx context.Context, c tokenpb.TokenServiceClient, in *tokenpb.ReleaseRequest) (*tokenpb.ReleaseResponse, error) {
	return c.Release(ctx, in)
}

func r2Settle(ctx context.Context, c tokenpb.TokenServiceClient, in *tokenpb.ReleaseRequest) (*tokenpb.ReleaseResponse, error) {
	return c.Settle(ctx, in)
}

// answerError is the error for a replica's non-decision; FAIL (its Redis
// is down) counts against the replica's breaker, unless partial (its
// backend failed for this request's keys alone: one Redis Cluster node;
// the replica decides others, and so would every replica); the others
// count as the replica's success (it answered).
func (s *TokenServer) answerError(r *replica, st tokenpb.Status, msg string, partial bool) error {
	s.st.Errors.Add(1)
	re := &ReplicaError{Addr: r.addr, Status: st, Message: msg, Partial: partial}
	switch {
	case st == tokenpb.Status_STATUS_FAIL && partial:
		r.br.Success()
		return fmt.Errorf("%w: %w", flow.ErrTokenServerUnavailable, re)
	case st == tokenpb.Status_STATUS_FAIL:
		r.br.Failure(s.now(), false)
		return fmt.Errorf("%w: %w", flow.ErrTokenServerUnavailable, re)
	case st == tokenpb.Status_STATUS_TOO_MANY_REQUEST:
		r.br.Success()
		return fmt.Errorf("%w: %w", flow.ErrTokenServerUnavailable, re)
	}
	r.br.Success()
	return re
}

// once sends one call to one replica chosen as the type's doc says, under
// the per-call timeout, and returns the replica it used.
func (s *TokenServer) once(ctx context.Context, call func(context.Context, *replica) error) (*replica, error) {
	start := s.now()
	r, i := s.pick(start)
	if r == nil {
		s.st.BreakerRejected.Add(1)
		return nil, fmt.Errorf("cluster: remote: %w: %w", flow.ErrTokenServerUnavailable, errNotReady)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	cctx, cancel := context.WithTimeout(ctx, s.cf.Timeout)
	err := call(cctx, r)
	cancel()
	end := s.now()
	s.st.Latency(end - start)
	if err != nil {
		var re *ReplicaError
		if errors.As(err, &re) {
			if re.Status == tokenpb.Status_STATUS_FAIL && !re.Partial {
				// It answered that it could not decide (its Redis hangs or
				// is gone): another replica may still reach Redis. A
				// partial failure (one shard) would be the same anywhere.
				s.pref.CompareAndSwap(uint32(i), uint32((i+1)%len(s.replicas)))
			}
			return r, err // answered: answerError saw to the breaker
		}
		s.st.Errors.Add(1)
		r.br.FailedCall(start, end, timedOut(err))
		// Prefer another replica from now on; this call is not replayed.
		s.pref.CompareAndSwap(uint32(i), uint32((i+1)%len(s.replicas)))
		return r, fmt.Errorf("cluster: remote %s: %w: %w", r.addr, flow.ErrTokenServerUnavailable, err)
	}
	r.br.SucceededAt(end)
	return r, nil
}

// timedOut reports a call that ran out of time (as opposed to a refused
// or reset connection).
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

// pick returns the replica to call and its index: the first, from the
// preferred one on, that is ready and whose breaker lets calls through;
// else the first still connecting (a call on it waits for the connection).
func (s *TokenServer) pick(now int64) (*replica, int) {
	n := len(s.replicas)
	first := int(s.pref.Load()) % n
	fallback := -1
	for k := range n {
		i := (first + k) % n
		r := s.replicas[i]
		switch r.cc.GetState() {
		case connectivity.Ready:
		case connectivity.Idle, connectivity.Connecting:
			r.cc.Connect() // an idle connection (dropped, or never used) dials again
			if fallback < 0 {
				fallback = i
			}
			continue
		default: // TransientFailure, Shutdown: a call would fail unsent
			continue
		}
		if r.br.Allow(now) {
			if k > 0 {
				s.pref.Store(uint32(i))
			}
			return r, i
		}
	}
	if fallback >= 0 && s.replicas[fallback].br.Allow(now) {
		return s.replicas[fallback], fallback
	}
	return nil, -1
}

// request is req on the wire; the rules' wire form is built once per rule
// set.
func (s *TokenServer) request(req *flow.TokenRequest) *tokenpb.AcquireRequest {
	w := s.wireRules(req.Rules)
	in := &tokenpb.AcquireRequest{Namespace: s.cf.namespace, Resource: req.Resource, Level: wire.FromLevel(req.Level),
		Key: req.Key, Tokens: int32(req.Tokens), RuleIds: w.ids, Factor: req.Factor}
	if req.Level == flow.LevelParam {
		// The engine asks for one param rule at a time (its values are its
		// own keys); its parameter's name travels with the value.
		in.Param = req.Rules[0].Param
	}
	if !s.cf.byID {
		in.Rules = w.rules
	}
	return in
}

func (s *TokenServer) wireRules(rules []*flow.Rule) *ruleSet {
	if v, ok := s.wire.Load(rules[0]); ok {
		if w := v.(*ruleSet); w.first == rules[0] && w.n == len(rules) {
			return w
		}
	}
	w := &ruleSet{first: rules[0], n: len(rules)}
	for _, r := range rules {
		w.ids = append(w.ids, r.ID)
		w.rules = append(w.rules, wire.FromRule(r))
	}
	if s.nwire.Add(1) > 4096 { // old rule sets stay until the cache is full
		s.wire.Clear()
		s.nwire.Store(1)
	}
	s.wire.Store(rules[0], w)
	return w
}

// Close closes the connections to every replica. Calling it again does
// nothing.
func (s *TokenServer) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		for _, r := range s.replicas {
			errs = append(errs, r.cc.Close())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// BreakerOpen reports whether every replica's breaker is open.
func (s *TokenServer) BreakerOpen() bool {
	for _, r := range s.replicas {
		if !r.br.Open() {
			return false
		}
	}
	return true
}

// Stats counts what a TokenServer did since it started.
type Stats struct {
	Passed          uint64 // decisions that admitted
	Blocked         uint64 // decisions that refused
	Errors          uint64 // calls that failed, and replicas' answers that were no decision
	BreakerRejected uint64 // calls failed at once: no replica ready, or every breaker open
	// Latency is the distribution of round trips to a replica, failed ones
	// included; calls the breakers rejected made none. Bounds are in
	// seconds: Counts[i] are calls up to Bounds[i], the last one those
	// above every bound.
	Latency     flow.Histogram
	LatencySum  time.Duration // total time of the calls Latency counts
	BreakerOpen bool          // every replica's breaker is open
	Instances   int           // what WithInstances says
}

// Stats returns the counters now; it never blocks a decision.
func (s *TokenServer) Stats() Stats {
	return Stats{Passed: s.st.Passed.Load(), Blocked: s.st.Blocked.Load(), Errors: s.st.Errors.Load(),
		BreakerRejected: s.st.BreakerRejected.Load(), Latency: s.st.Histogram(), LatencySum: s.st.Sum(),
		BreakerOpen: s.BreakerOpen(), Instances: s.Instances()}
}

// Latency returns the round-trip histogram (seconds, failed calls included)
// and the total time of those calls; with BreakerOpen it is what
// metrics.WithCluster(ts) exports.
func (s *TokenServer) Latency() (flow.Histogram, time.Duration) {
	return s.st.Histogram(), s.st.Sum()
}

// bearer is the per-call credential of WithToken.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false so the token also works on loopback
// without TLS; see WithToken.
func (b bearer) RequireTransportSecurity() bool { return false }
