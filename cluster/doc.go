// Package cluster owns flowgate's cluster-wide quotas: a flow.TokenServer
// that decides rules with a Cluster spec in Redis, so a limit of 1000/s
// holds for a service on 20 instances, not for each of them.
//
// Use it as flow.NewEngine(flow.WithTokenServer(ts)) with ts from
// NewRedisTokenServer. Each Entry makes one Lua call per level: every
// cluster rule of that level and key is checked and, only if all pass,
// counted, atomically; the reply names the rule that refused. The scripts
// are one .lua file per algorithm (lua/), assembled with a common prelude
// and embedded; they take time from Redis TIME in integer microseconds, so
// instances whose clocks disagree still share one exact limit, and all
// keys of a decision share a {hash tag} so Redis Cluster accepts them.
//
// Thresholds: "global" rules hold Limit across the cluster; "per_instance"
// rules hold Limit x the live instances, counted by heartbeats in Redis.
//
// Failure: each call has a timeout (20ms by default) and a circuit breaker
// turns a dead Redis into fast failures wrapping
// flow.ErrTokenServerUnavailable; the engine then applies each rule's
// fallback (local, allow or deny). Stats and ClusterMetrics expose request
// counts, latency and the breaker for package metrics.
//
// Leasing (WithLeasing) trades a documented, bounded over-admission for
// far fewer round trips on hot keys; see LeaseConfig.
package cluster
