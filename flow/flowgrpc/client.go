package flowgrpc

import (
	"context"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowgate/flowgate/flow"
)

// UnaryClientInterceptor guards outbound unary calls with eng (flow.Default()
// when nil): a refused call fails locally with ResourceExhausted and is never
// sent. An answer of UNAVAILABLE or RESOURCE_EXHAUSTED exits the permit with
// an error matching flow.ErrOverloaded, which client_throttle rules count as
// not accepted.
func UnaryClientInterceptor(eng *flow.Engine, opts ...Option) grpc.UnaryClientInterceptor {
	ic := newInterceptor(eng, opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		p, err := ic.enter(ctx, method, false)
		if err != nil {
			return err
		}
		returned := false
		defer func() {
			if !returned {
				p.Exit(flow.WithError(ErrPanicked))
			}
		}()
		err = invoker(ctx, method, req, reply, cc, callOpts...)
		returned = true
		if overloaded(err) {
			p.Exit(flow.WithError(fmt.Errorf("%w: %w", flow.ErrOverloaded, err)))
			return err
		}
		ic.exit(p, err)
		return err
	}
}

// overloaded reports a backend's refusal for overload, UNAVAILABLE or
// RESOURCE_EXHAUSTED: client_throttle rules count it as not accepted.
func overloaded(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted:
		return true
	}
	return false
}

// StreamClientInterceptor guards outbound streams with eng (flow.Default()
// when nil). The permit is held until the stream ends: RecvMsg returns an
// error (io.EOF included), the single reply of a client-streaming call
// arrives, or ctx ends, whichever comes first. As grpc-go itself asks, a
// caller must do one of these, or the permit is never released.
func StreamClientInterceptor(eng *flow.Engine, opts ...Option) grpc.StreamClientInterceptor {
	ic := newInterceptor(eng, opts)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		p, err := ic.enter(ctx, method, false)
		if err != nil {
			return nil, err
		}
		cs, err := streamer(ctx, desc, cc, method, callOpts...)
		if err != nil {
			ic.exit(p, err)
			return nil, err
		}
		s := &clientStream{ClientStream: cs, ic: ic, p: p, oneReply: !desc.ServerStreams}
		s.stop = context.AfterFunc(ctx, func() { s.end(status.FromContextError(ctx.Err()).Err()) })
		return s, nil
	}
}

// clientStream exits its permit once when the stream ends (a second Exit
// would do nothing); the Once makes a RecvMsg that loses the race to the
// context wait until the permit has exited, and records the first outcome.
type clientStream struct {
	grpc.ClientStream
	ic       *interceptor
	p        flow.Permit
	oneReply bool
	once     sync.Once
	stop     func() bool
}

func (s *clientStream) end(err error) {
	s.once.Do(func() {
		if err == io.EOF {
			err = nil
		}
		s.ic.exit(s.p, err)
	})
}

func (s *clientStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil || s.oneReply {
		s.stop()
		s.end(err)
	}
	return err
}
