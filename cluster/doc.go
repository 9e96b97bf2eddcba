// Package cluster owns flowgate's cluster-wide quotas: a flow.TokenServer
// that decides rules with a Cluster spec in Redis, so a limit of 1000/s
// holds for a service on 20 instances, not for each of them.
//
// Use it as flow.NewEngine(flow.WithTokenServer(ts)) with ts from
// NewRedisTokenServer. Each Entry makes one Lua call per level: every
// cluster rule of that level and key is checked and, only if all pass,
// counted, atomically; the reply names the rule that refused.
//
// # Scripts
//
// There is one .lua file per algorithm (lua/token_bucket.lua, warm_up,
// leaky_bucket, fixed_window, sliding_window, sliding_log, concurrency),
// each defining check, commit and refund for one rule. A script is a
// common prelude, the algorithms a request uses and a main (acquire.lua:
// check every rule, then commit every rule; lease.lua; release.lua),
// assembled when the package initialises and embedded. A level with one
// cluster rule, the common case, runs a leaner variant assembled from the
// same algorithm file (prelude1.lua, acquire1.lua), without the generic
// script's per-rule tables and loops. Time comes from
// Redis TIME in integer microseconds, so instances whose clocks disagree
// still share one exact limit; every key gets its expiry in the script that
// writes it, derived from its state; scripts run with EVALSHA, and after
// NOSCRIPT one SCRIPT LOAD per script at a time puts them back while the
// callers that hit it wait (within their timeout).
//
// Keys are prefix{resource|level|key}:ruleID (prefix "flowgate:" by
// default, WithPrefix): the keys of one decision share a {hash tag}, so
// Redis Cluster takes them in one call, and users and IPs spread over the
// slots.
//
// # Thresholds
//
// "global" rules hold Limit across the cluster; "per_instance" rules hold
// Limit x the live instances, counted by heartbeats in Redis.
//
// # Failure
//
// Each call has a timeout (20ms by default, WithTimeout) that holds with
// any go-redis client (the server builds its own from the user's options
// with safe overrides, see NewRedisTokenServer), and no call that may have
// been applied is sent twice. A circuit breaker (WithBreaker) turns a dead
// Redis into fast failures wrapping flow.ErrTokenServerUnavailable; the
// engine then applies each rule's fallback (local, allow or deny). While
// it is open, a background prober reconnects, reloads the scripts and
// closes it. The local fallback divides Limit by Instances, a count that
// rises at once but drops only once the drop has lasted a heartbeat TTL:
// a heartbeat set wiped by a restart or FLUSHALL, or an instance whose
// beats failed during an outage, never enlarges a share. Cluster
// concurrency permits are leases that a live instance renews and a
// crashed one's expire
// (WithConcurrencyTTL). Stats, Latency and BreakerOpen expose request
// counts, latency and the breaker; the last two make a server a
// metrics.ClusterSource without this package importing metrics.
//
// # Leasing
//
// WithLeasing trades a small, measured error (bench/README.md,
// "Distributed accuracy") for far fewer round trips on hot keys; see
// LeaseConfig for where it applies and what it costs.
//
// # Release and refund
//
// flow.TokenServer.Release comes in two kinds, told apart by
// flow.TokenRequest.Refund. A refund (a later level refused the call)
// gives back every rule's permits in one script call, rate tokens and
// concurrency permits alike; a release on Exit gives back only
// concurrency permits, named by the Acquire's Lease, and rate tokens stay
// spent.
//
// # Token service and remote client
//
// Instances need not each hold Redis connections and scripts: `flowgate
// serve` (command cmd/flowgate) runs a RedisTokenServer behind the gRPC
// TokenService of package tokenpb (server in package tokenrpc), with
// Sentinel's statuses, rules by id from a hot-reloaded document or sent
// inline, a per-namespace request cap, TLS, bearer-token auth, health and
// /metrics. It keeps no decision state of its own, so it runs as N
// replicas over one Redis.
//
// Its client is package cluster/remote, a flow.TokenServer itself, kept
// apart so that a program using Redis directly links no gRPC, and a
// program using the service links no Redis client.
package cluster
