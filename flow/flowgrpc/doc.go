// Package flowgrpc owns flowgate's gRPC adapter: unary and stream
// interceptors that guard server methods, and client calls for outbound
// protection, with a flow.Engine.
//
// The resource is the full method name ("/pkg.Service/Method"). A refused
// call fails with codes.ResourceExhausted (codes.Unavailable, ErrorInfo
// reason CIRCUIT_OPEN, when a circuit breaker is open; codes.PermissionDenied,
// reason LIST_REFUSED, when an allow or deny list refuses) carrying a google.rpc.RetryInfo
// detail (when the wait is known) and a google.rpc.ErrorInfo naming the
// rule. On the server the client IP is the peer's address; the
// x-forwarded-for metadata is believed only from peers listed by
// WithTrustedProxies, walked from the right as in package flowhttp.
// WithParamsFromMetadata gives param rules their values from metadata.
//
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(flowgrpc.UnaryServerInterceptor(eng)),
//		grpc.ChainStreamInterceptor(flowgrpc.StreamServerInterceptor(eng)),
//	)
//
// A stream's permit is held until its handler returns (server) or the stream
// ends (client: the last message, an error, or the context's end), so
// concurrency rules count open streams.
package flowgrpc
