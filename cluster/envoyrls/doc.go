// Package envoyrls owns flowgate's Envoy rate-limit service: it answers
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, the call
// Envoy, Istio and Envoy Gateway make to an external rate-limit service.
//
// Its configuration is the YAML of envoyproxy/ratelimit, read unchanged:
// domains, nested descriptors with key and value, wildcard values,
// rate_limit (unit, requests_per_unit, unlimited, name, replaces),
// shadow_mode, share_threshold, detailed_metric, value_to_metric. A config
// that uses only those fields decides as envoyproxy/ratelimit does: fixed
// windows aligned to the unit on this process's clock, every hit counted
// (over-limit ones too), each descriptor of a request decided on its own.
// Fields are added inside rate_limit: algorithm chooses a flowgate
// algorithm for a descriptor (sliding_window, token_bucket, warm_up,
// leaky_bucket, sliding_log, fixed_window), decided by a flow engine or,
// with Redis, by the cluster token server; lease has a hot descriptor's
// permits taken from Redis in batches (WithLeasing); settle charges the
// hits of Envoy's response-phase calls after the fact, into a debt
// bounded by max_debt. WithDomainHashTag keeps a domain's counters in one
// Redis Cluster slot. A RedisStore shares its pipelines among concurrent
// requests (the same commands and keys as envoyproxy/ratelimit, fewer
// round trips) and is closed by its owner.
//
// Load reads files into an immutable *Config; a Service answers calls
// with the Config it holds (Service.Load swaps it); a Watcher keeps a
// Service in step with a file or a directory of them; NewServer serves a
// Service over gRPC with health and reflection.
package envoyrls
