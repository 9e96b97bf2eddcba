package metrics

// Prometheus metric names. They share one prefix, use base units (seconds,
// ratios in 0..1) and end counters in _total. The dashboard and the alert
// rules are tested against this set.
const (
	NameRequests          = "flowgate_requests_total"
	NameRequestErrors     = "flowgate_request_errors_total"
	NameInFlight          = "flowgate_in_flight"
	NameResponseTime      = "flowgate_response_time_seconds"
	NameWait              = "flowgate_wait_seconds"
	NameRuleLimit         = "flowgate_rule_limit"
	NameRuleWindow        = "flowgate_rule_window_seconds"
	NameRuleKeys          = "flowgate_rule_keys"
	NameRuleInfo          = "flowgate_rule_info"
	NameAdaptiveFactor    = "flowgate_adaptive_factor"
	NameAdaptiveLimit     = "flowgate_adaptive_limit"       // adaptive_concurrency rules: {resource, rule}
	NameAdaptiveRTT       = "flowgate_adaptive_rtt_seconds" // adaptive_concurrency rules: {resource, rule, estimate}
	NameSystemMaxInFlight = "flowgate_system_max_in_flight"
	NameCPU               = "flowgate_cpu_usage_ratio"
	NameCPUSource         = "flowgate_cpu_source_info"
	NameClusterRequests   = "flowgate_cluster_requests_total"
	NameClusterFallbacks  = "flowgate_cluster_fallbacks_total"
	NameClusterDuration   = "flowgate_cluster_request_duration_seconds"
	NameClusterBreaker    = "flowgate_cluster_breaker_open"
	NameReloadSuccessful  = "flowgate_rules_last_reload_successful"
	NameReloadTimestamp   = "flowgate_rules_last_reload_success_timestamp_seconds"
	NameAlertsFiring      = "flowgate_alerts_firing"
)

// Values of the result label of flowgate_requests_total. The three partition
// the calls: passed (admitted at once), waited (admitted after queueing),
// blocked (refused).
const (
	ResultPassed  = "passed"
	ResultWaited  = "waited"
	ResultBlocked = "blocked"
)

// Values of the estimate label of flowgate_adaptive_rtt_seconds.
const (
	EstimateShort = "short" // mean response time of the last window
	EstimateLong  = "long"  // long-term (no-queue) response time
)

// clusterResults and fallbackPolicies are the label values the engine's
// ClusterStats uses; each is exported from the start, 0 until it happens.
var (
	clusterResults   = []string{"passed", "blocked", "error"}
	fallbackPolicies = []string{"local", "allow", "deny"}
)
