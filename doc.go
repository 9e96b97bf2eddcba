// Package flowgate owns the overview of the flowgate module, an adaptive,
// multi-level flow-control library for Go in the style of Alibaba Sentinel,
// and the end-to-end tests that cross its packages; it holds no code.
//
// A service guards a call with flow.Entry(resource); rules decide whether the
// call passes, waits for its turn, or is blocked. Rules combine limits at three
// levels — all callers, one user, one client IP — and each rule picks an
// algorithm: Guava's SmoothBursty and SmoothWarmingUp token buckets, a leaky
// bucket, fixed and sliding windows, an exact sliding log, or a concurrency cap.
//
// The module is a star around package flow:
//
//	clock/            time for everything: the real clock and a virtual one for tests
//	tokenbucket/      Guava-exact token buckets (SmoothBursty, SmoothWarmingUp)
//	flow/             the engine: Entry, Exit, Guard, rules, levels, statistics
//	flow/flowhttp/    net/http middleware: 429, Retry-After, RateLimit headers
//	flow/flowgrpc/    gRPC interceptors: ResourceExhausted with RetryInfo
//	rules/            JSON rule documents: strict parsing, precise errors, hot reload
//	adaptive/         CPU-driven scaling of rule rates and system protection
//	cluster/          cluster-wide quotas decided by Redis Lua scripts, in process or via tokenrpc
//	cluster/tokenrpc/ the token service: a gRPC server over any flow.TokenServer
//	metrics/          Prometheus and OpenTelemetry exporters, Grafana dashboard
//	alerting/         an alert when the rejection ratio passes a threshold
//	cmd/flowgate/     validate and format rule files; serve the token service
//
// Runnable programs live under examples/; `make demo` runs the tour.
package flowgate
