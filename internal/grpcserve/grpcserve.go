// Package grpcserve is what flowgate's gRPC services (the token service,
// the Envoy rate-limit service) share about their lifetime: serving until
// stopped, and a shutdown that drains the calls in flight within a bound.
package grpcserve

import (
	"context"
	"errors"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
)

// Serve accepts connections on lis until g is stopped, then returns nil;
// any other error is the listener's.
func Serve(g *grpc.Server, lis net.Listener) error {
	err := g.Serve(lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Drain reports NOT_SERVING to health checks, stops accepting calls and
// waits for those in flight to finish; when ctx ends first it closes every
// connection at once and returns ctx's error.
func Drain(ctx context.Context, g *grpc.Server, h *health.Server) error {
	h.Shutdown()
	done := make(chan struct{})
	go func() {
		g.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		g.Stop()
		<-done
		return ctx.Err()
	}
}
