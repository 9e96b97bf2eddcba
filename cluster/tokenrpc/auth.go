package tokenrpc

import (
	"context"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// authorize checks the bearer token of TokenService calls. The health
// service is left open so load balancers and probes need no secret.
func (s *Server) authorize(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s.cf.token == "" || strings.HasPrefix(info.FullMethod, "/grpc.health.v1.Health/") {
		return handler(ctx, req)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	ok := false
	for _, v := range md.Get("authorization") {
		tok, found := strings.CutPrefix(v, "Bearer ")
		// Constant time over the token, so timing does not reveal a prefix.
		if found && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cf.token)) == 1 {
			ok = true
		}
	}
	if !ok {
		s.st.unauthenticated.Add(1)
		return nil, status.Error(codes.Unauthenticated, "tokenrpc: missing or wrong bearer token")
	}
	return handler(ctx, req)
}
