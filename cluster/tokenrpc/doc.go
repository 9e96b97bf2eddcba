// Package tokenrpc owns the gRPC side of flowgate's token service: a Server
// that puts any flow.TokenServer (in practice cluster.RedisTokenServer)
// behind the TokenService of package tokenpb, with Sentinel's statuses,
// rules resolved by id or sent inline, a per-namespace cap on accepted
// requests (Sentinel's maxAllowedQps), bearer-token auth, TLS, the standard
// gRPC health service, Prometheus metrics and a draining shutdown.
//
// The server keeps no decision state of its own: every decision is the
// wrapped token server's (Redis's), so any number of replicas can serve the
// same clients. remote.New (package cluster/remote) is the client.
package tokenrpc
