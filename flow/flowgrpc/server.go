package flowgrpc

import (
	"context"

	"google.golang.org/grpc"

	"github.com/flowgate/flowgate/flow"
)

// Short local names for the engine's option constructors.
type flowEntryOption = flow.EntryOption

var (
	withContext  = flow.WithContext
	withUser     = flow.WithUser
	withIP       = flow.WithIP
	withPriority = flow.WithPriority
)

// interceptor holds what every interceptor of one configuration shares.
type interceptor struct {
	eng *flow.Engine
	cf  *config
}

func newInterceptor(eng *flow.Engine, opts []Option) *interceptor {
	if eng == nil {
		eng = flow.Default()
	}
	return &interceptor{eng: eng, cf: newConfig(opts)}
}

func (ic *interceptor) resource(ctx context.Context, method string) string {
	if ic.cf.resource != nil {
		return ic.cf.resource(ctx, method)
	}
	return method
}

// enter decides with Decide, so the refusal stays on this stack frame
// until blockedError has turned it into a status.
func (ic *interceptor) enter(ctx context.Context, method string, server bool) (flow.Permit, error) {
	var arr [9]flowEntryOption // context, user, ip, priority and five params without allocating
	d := ic.eng.Decide(ic.resource(ctx, method), ic.cf.entryOptions(ctx, &arr, server)...)
	if !d.Allowed {
		return flow.Permit{}, blockedError(ctx, &d.Block)
	}
	return d.Permit, nil
}

// exit ends p, recording err when the configuration counts it a failure.
func (ic *interceptor) exit(p flow.Permit, err error) {
	if ic.cf.failed(err) {
		p.Exit(flow.WithError(err))
		return
	}
	p.Exit()
}

// UnaryServerInterceptor guards unary methods with eng (flow.Default() when
// nil). A refused call fails with ResourceExhausted (Unavailable for an open
// circuit breaker) and never reaches the handler; the permit exits when the
// handler returns or panics.
func UnaryServerInterceptor(eng *flow.Engine, opts ...Option) grpc.UnaryServerInterceptor {
	ic := newInterceptor(eng, opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		p, err := ic.enter(ctx, info.FullMethod, true)
		if err != nil {
			return nil, err
		}
		returned := false
		defer func() {
			if !returned { // no recover: the panic keeps its stack
				p.Exit(flow.WithError(ErrPanicked))
			}
		}()
		resp, err = handler(ctx, req)
		returned = true
		ic.exit(p, err)
		return resp, err
	}
}

// StreamServerInterceptor guards streaming methods with eng (flow.Default()
// when nil). The permit is held for the life of the stream and exits when
// the handler returns.
func StreamServerInterceptor(eng *flow.Engine, opts ...Option) grpc.StreamServerInterceptor {
	ic := newInterceptor(eng, opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		p, err := ic.enter(ss.Context(), info.FullMethod, true)
		if err != nil {
			return err
		}
		returned := false
		defer func() {
			if !returned {
				p.Exit(flow.WithError(ErrPanicked))
			}
		}()
		err = handler(srv, ss)
		returned = true
		ic.exit(p, err)
		return err
	}
}
