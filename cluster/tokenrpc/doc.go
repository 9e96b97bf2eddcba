// Package tokenrpc owns the gRPC side of flowgate's token service: a Server
// that puts any flow.TokenServer (in practice cluster.RedisTokenServer)
// behind the TokenService of package tokenpb, with Sentinel's statuses,
// rules resolved by id or sent inline, a per-namespace cap on accepted
// requests (Sentinel's maxAllowedQps), bearer-token auth, TLS, the standard
// gRPC health service, Prometheus metrics and a draining shutdown.
//
// Every request is bounded (MaxResourceBytes, MaxKeyBytes,
// MaxNamespaceBytes, MaxNameBytes, MaxRulesPerRequest) and refused
// STATUS_BAD_REQUEST over a bound, before it is counted, kept or handed to
// the token server; what the server keeps per name a client chooses
// (interned rule sets, decision counts, namespace counters) is bounded in
// entries and bytes.
//
// The server keeps no decision state of its own: every decision is the
// wrapped token server's (Redis's), so any number of replicas can serve the
// same clients. remote.New (package cluster/remote) is the client.
//
// Every level goes through it, param included (the request names the
// parameter; its value is the key). A rule's items are decided as the
// engine decides them: by the item's own rule, sent inline by the client,
// or derived (flow.Rule.ForItem) from the served document's rule when
// clients name rules by id.
package tokenrpc
