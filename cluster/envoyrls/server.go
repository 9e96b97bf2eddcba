package envoyrls

import (
	"context"
	"crypto/subtle"
	"net"
	"strings"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/flowgate/flowgate/internal/grpcserve"
)

// Server serves a Service over gRPC, with the standard health service
// and server reflection beside it.
type Server struct {
	grpc   *grpc.Server
	health *health.Server
}

// NewServer returns a server for svc. A non-empty token must come with
// every RateLimitService call as "authorization: Bearer TOKEN" (Envoy
// sends it from the grpc_service's initial_metadata); health checks and
// reflection stay open. gopts are passed to grpc.NewServer (credentials).
func NewServer(svc *Service, token string, gopts ...grpc.ServerOption) *Server {
	if token != "" {
		gopts = append(gopts, grpc.ChainUnaryInterceptor(bearer(token)))
	}
	s := &Server{grpc: grpc.NewServer(gopts...), health: health.NewServer()}
	rlspb.RegisterRateLimitServiceServer(s.grpc, svc)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(rlspb.RateLimitService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	return s
}

// bearer refuses RateLimitService calls without the token.
func bearer(token string) grpc.UnaryServerInterceptor {
	want := []byte("Bearer " + token)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, "/"+rlspb.RateLimitService_ServiceDesc.ServiceName+"/") {
			return next(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		for _, v := range md.Get("authorization") {
			if subtle.ConstantTimeCompare([]byte(v), want) == 1 {
				return next(ctx, req)
			}
		}
		return nil, status.Error(codes.Unauthenticated, "missing or wrong bearer token")
	}
}

// Serve accepts connections on lis until Shutdown or Stop, then returns
// nil; any other error is the listener's.
func (s *Server) Serve(lis net.Listener) error { return grpcserve.Serve(s.grpc, lis) }

// Shutdown reports NOT_SERVING to health checks and lets the calls in
// flight finish; when ctx ends first it closes every connection.
func (s *Server) Shutdown(ctx context.Context) error { return grpcserve.Drain(ctx, s.grpc, s.health) }

// Stop closes every connection and the listener at once.
func (s *Server) Stop() {
	s.health.Shutdown()
	s.grpc.Stop()
}
