package tokenrpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/cluster/internal/wire"
	"github.com/flowgate/flowgate/cluster/tokenpb"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/grpcserve"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Server serves a flow.TokenServer over gRPC. Create it with NewServer,
// run it with Serve, stop it with Shutdown (draining) or Stop.
type Server struct {
	tokenpb.UnimplementedTokenServiceServer

	ts     flow.TokenServer
	byID   func(id string) (*flow.Rule, bool)
	cf     config
	guard  *guard
	sets   *ruleSets
	st     serverStats
	dec    decisions
	grpc   *grpc.Server
	health *health.Server
}

var _ tokenpb.TokenServiceServer = (*Server)(nil)

// NewServer returns a server deciding with ts. rulesByID resolves the rule
// ids clients name (nil: no document is served, clients send rules
// inline); it must return the same pointer for a rule until the document
// changes, and be safe for concurrent use.
func NewServer(ts flow.TokenServer, rulesByID func(id string) (*flow.Rule, bool), opts ...Option) (*Server, error) {
	if ts == nil {
		return nil, errors.New("tokenrpc: nil token server")
	}
	cf := defaults()
	for _, o := range opts {
		if o != nil {
			o(&cf)
		}
	}
	s := &Server{ts: ts, byID: rulesByID, cf: cf, guard: newGuard(cf.maxQPS), sets: newRuleSets(cf.maxRuleSet, cf.maxRuleSetBytes)}
	gopts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(s.authorize)}
	if cf.tls != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(cf.tls)))
	}
	s.grpc = grpc.NewServer(append(gopts, cf.grpcOpts...)...)
	tokenpb.RegisterTokenServiceServer(s.grpc, s)
	s.health = health.NewServer()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(tokenpb.TokenService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	return s, nil
}

// Serve accepts connections on lis until Shutdown or Stop; it then returns
// nil. Any other error is the listener's.
func (s *Server) Serve(lis net.Listener) error {
	s.logInfo("tokenrpc: serving", slog.String("addr", lis.Addr().String()), slog.Bool("tls", s.cf.tls != nil), slog.Bool("auth", s.cf.token != ""))
	return grpcserve.Serve(s.grpc, lis)
}

// Shutdown stops accepting calls, reports NOT_SERVING to health checks,
// and waits for the calls in flight to finish; if ctx ends first, it
// closes every connection at once and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	err := grpcserve.Drain(ctx, s.grpc, s.health)
	if err == nil {
		s.logInfo("tokenrpc: stopped, calls drained")
	}
	return err
}

// Stop closes every connection and listener at once, as a crash would
// from the clients' side (calls in flight fail).
func (s *Server) Stop() {
	s.health.Shutdown()
	s.grpc.Stop()
}

// Acquire implements tokenpb.TokenServiceServer.
func (s *Server) Acquire(ctx context.Context, in *tokenpb.AcquireRequest) (*tokenpb.AcquireResponse, error) {
	start := clock.Nanotime(s.cf.clk)
	out := s.acquire(ctx, in, start)
	s.st.observe(methodAcquire, out.Status, clock.Nanotime(s.cf.clk)-start)
	return out, nil
}

func (s *Server) acquire(ctx context.Context, in *tokenpb.AcquireRequest, now int64) *tokenpb.AcquireResponse {
	if err := checkBounds(in); err != nil {
		// Before the namespace is counted: a namespace over its bound
		// would otherwise be kept as the counter's key.
		return &tokenpb.AcquireResponse{Status: tokenpb.Status_STATUS_BAD_REQUEST, Refused: -1, Message: err.Error()}
	}
	ns := in.GetNamespace()
	if ns == "" {
		ns = DefaultNamespace
	}
	if !s.guard.admit(ns, now) {
		return &tokenpb.AcquireResponse{Status: tokenpb.Status_STATUS_TOO_MANY_REQUEST, Refused: -1,
			RetryAfterNanos: int64(time.Second - time.Duration(now%1e9)), Message: "namespace " + ns + " over its request cap"}
	}
	req, st, err := s.request(in)
	if err != nil {
		return &tokenpb.AcquireResponse{Status: st, Refused: -1, Message: err.Error()}
	}
	if len(req.Rules) == 0 {
		return &tokenpb.AcquireResponse{Status: tokenpb.Status_STATUS_OK, Refused: -1}
	}
	res, err := s.ts.Acquire(ctx, req)
	if err != nil {
		partial := s.backendError(err)
		return &tokenpb.AcquireResponse{Status: tokenpb.Status_STATUS_FAIL, Refused: -1, Message: err.Error(), Partial: partial}
	}
	out := &tokenpb.AcquireResponse{Status: tokenpb.Status_STATUS_OK, Remaining: res.Remaining,
		RetryAfterNanos: int64(res.RetryAfter), WaitNanos: int64(res.Wait), Lease: res.Lease, Refused: -1,
		CountedAt: res.At, Stripe: int32(res.Stripe)}
	s.dec.record(req.Resource, req.Level, res.Allowed) // every rule of a request is at req.Level
	switch {
	case !res.Allowed:
		out.Status, out.Refused = tokenpb.Status_STATUS_BLOCKED, int32(res.Refused)
		if res.Refused >= 0 && res.Refused < len(req.Rules) {
			out.RefusedRuleId = req.Rules[res.Refused].ID
		}
	case res.Wait > 0:
		out.Status = tokenpb.Status_STATUS_SHOULD_WAIT
	}
	return out
}

// Release implements tokenpb.TokenServiceServer. Releases are not capped.
func (s *Server) Release(ctx context.Context, in *tokenpb.ReleaseRequest) (*tokenpb.ReleaseResponse, error) {
	start := clock.Nanotime(s.cf.clk)
	out := s.release(ctx, in)
	s.st.observe(methodRelease, out.Status, clock.Nanotime(s.cf.clk)-start)
	return out, nil
}

// Settle implements tokenpb.TokenServiceServer: a Release that settles the
// call at its actual cost (see the method in token.proto). Not capped.
func (s *Server) Settle(ctx context.Context, in *tokenpb.ReleaseRequest) (*tokenpb.ReleaseResponse, error) {
	start := clock.Nanotime(s.cf.clk)
	var out *tokenpb.ReleaseResponse
	switch {
	case !in.GetSettle() || in.GetRefund():
		out = &tokenpb.ReleaseResponse{Status: tokenpb.Status_STATUS_BAD_REQUEST, Message: "settle: needs settle true and refund false"}
	case in.GetActualCost() < 0 || in.GetActualCost() > math.MaxInt32:
		out = &tokenpb.ReleaseResponse{Status: tokenpb.Status_STATUS_BAD_REQUEST, Message: fmt.Sprintf("actual_cost: %d out of [0, 2^31)", in.GetActualCost())}
	default:
		out = s.release(ctx, in)
	}
	s.st.observe(methodSettle, out.Status, clock.Nanotime(s.cf.clk)-start)
	return out, nil
}

func (s *Server) release(ctx context.Context, in *tokenpb.ReleaseRequest) *tokenpb.ReleaseResponse {
	req, st, err := s.request(in.GetRequest())
	if err != nil {
		return &tokenpb.ReleaseResponse{Status: st, Message: err.Error()}
	}
	if len(req.Rules) > 0 {
		// Without a lease there is nothing but a refund to do (older
		// clients sent no refund flag and meant one), unless settling.
		req.Settle = in.GetSettle() && !in.GetRefund()
		req.Refund = !req.Settle && (in.GetRefund() || in.GetLease() == "")
		req.Actual = int(max(0, min(in.GetActualCost(), math.MaxInt32)))
		res := flow.TokenResult{Allowed: true, Refused: -1, Lease: in.GetLease(), At: in.GetCountedAt(), Stripe: int(in.GetStripe())}
		if err := s.ts.Release(ctx, req, res); err != nil {
			partial := s.backendError(err)
			return &tokenpb.ReleaseResponse{Status: tokenpb.Status_STATUS_FAIL, Message: err.Error(), Partial: partial}
		}
	}
	return &tokenpb.ReleaseResponse{Status: tokenpb.Status_STATUS_OK}
}

// request turns in into a flow.TokenRequest; on error the status says
// which kind of refusal it is. A request over a bound (checkBounds) is
// refused before its rules are resolved or kept.
func (s *Server) request(in *tokenpb.AcquireRequest) (flow.TokenRequest, tokenpb.Status, error) {
	if in == nil {
		return flow.TokenRequest{}, tokenpb.Status_STATUS_BAD_REQUEST, errors.New("request: missing")
	}
	if err := checkBounds(in); err != nil {
		return flow.TokenRequest{}, tokenpb.Status_STATUS_BAD_REQUEST, err
	}
	lv, err := wire.ToLevel(in.GetLevel())
	if err != nil {
		return flow.TokenRequest{}, tokenpb.Status_STATUS_BAD_REQUEST, err
	}
	if in.GetTokens() <= 0 {
		return flow.TokenRequest{}, tokenpb.Status_STATUS_BAD_REQUEST, fmt.Errorf("tokens: %d must be > 0", in.GetTokens())
	}
	rules, err := s.sets.resolve(in, s.cf.inline, s.byID)
	if err != nil {
		if errors.Is(err, errNoRule) {
			return flow.TokenRequest{}, tokenpb.Status_STATUS_NO_RULE_EXISTS, err
		}
		return flow.TokenRequest{}, tokenpb.Status_STATUS_BAD_REQUEST, err
	}
	if (lv == flow.LevelParam) != (in.GetParam() != "") {
		return flow.TokenRequest{}, tokenpb.Status_STATUS_BAD_REQUEST,
			fmt.Errorf("param: %q at level %v (a param names the parameter at level param, and only there)", in.GetParam(), lv)
	}
	for i, r := range rules {
		if r.Resource != in.GetResource() || r.Level != lv {
			return flow.TokenRequest{}, tokenpb.Status_STATUS_BAD_REQUEST,
				fmt.Errorf("rules[%d] (id %q): is for %q at level %v, not %q at level %v", i, r.ID, r.Resource, r.Level, in.GetResource(), lv)
		}
		// The param's values are the rule's keys: counting one
		// parameter's values on another's rule would mix them.
		if r.Param != in.GetParam() {
			return flow.TokenRequest{}, tokenpb.Status_STATUS_BAD_REQUEST,
				fmt.Errorf("rules[%d] (id %q): counts param %q, not %q", i, r.ID, r.Param, in.GetParam())
		}
	}
	f := in.GetFactor()
	if f <= 0 || f > 1 {
		f = 1
	}
	return flow.TokenRequest{Resource: in.GetResource(), Level: lv, Key: in.GetKey(), Tokens: int(in.GetTokens()), Rules: rules, Factor: f}, 0, nil
}

// backendError counts and logs a failed decision and reports whether the
// failure is partial: the backend failed for this request's keys alone
// (cluster.NodeError with Partial: one Redis Cluster node), so the reply
// says so and clients do not open their breaker on this replica. It is
// read through an interface, as this package does not import the backend.
func (s *Server) backendError(err error) (partial bool) {
	if errors.Is(err, flow.ErrTokenServerUnavailable) {
		s.st.backendErrors.Add(1)
	}
	var po interface{ PartialOutage() bool }
	partial = errors.As(err, &po) && po.PartialOutage()
	if s.cf.log != nil && !partial {
		// A partial outage is logged once per node by the backend itself
		// (one line at the start, a summary every 10s, one at the end).
		s.cf.log.Warn("tokenrpc: token server", slog.Any("err", err))
	}
	return partial
}

func (s *Server) logInfo(msg string, attrs ...any) {
	if s.cf.log != nil {
		s.cf.log.Info(msg, attrs...)
	}
}
