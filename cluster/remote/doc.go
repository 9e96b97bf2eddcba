// Package remote owns the client of flowgate's token service: a
// flow.TokenServer that asks `flowgate serve` replicas (package
// cluster/tokenrpc) over gRPC instead of Redis. It is the gRPC transport;
// package cluster is the Redis one, and neither imports the other.
//
// New returns the client. The engine uses it exactly as the embedded
// cluster.RedisTokenServer, with the same per-call timeout (WithTimeout,
// 20ms by default), a breaker per replica (WithBreaker) and the rules'
// fallbacks when no replica answers. It keeps one connection per replica
// and fails over to the next ready one; a call handed to a replica is
// never re-sent elsewhere (it may have counted), except an Exit release,
// which is idempotent. A busy replica (namespace cap) sends the engine to
// its fallback without opening the breaker. See TokenServer for thresholds
// through the service.
package remote
