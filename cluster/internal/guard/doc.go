// Package guard owns what the two token-server clients share: the per-call
// circuit breaker, the call counters with their round-trip histogram, and
// the defaults of the per-call timeout and the breaker. The Redis token
// server (package cluster) and the gRPC client (package cluster/remote)
// each wrap them in their own options.
package guard
