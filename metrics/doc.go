// Package metrics owns flowgate's exported telemetry: a Prometheus collector,
// OpenTelemetry observable instruments, the Grafana dashboard
// (dashboards/flowgate.json) and the Prometheus alert rules
// (alerts/flowgate.rules.yml).
//
// Both exporters read [flow.Engine.Snapshot] when they are scraped or
// collected, so they add nothing to the Entry hot path and cost nothing
// between scrapes. Nothing is registered globally: the caller registers
// the collector on a registry of its choosing,
//
//	reg.MustRegister(metrics.NewCollector(eng))
//
// or hands RegisterOTel the MeterProvider to observe on.
//
// # Requests
//
// flowgate_requests_total{resource,level,result} partitions the calls of
// a resource: result="passed" counts calls admitted without waiting,
// result="waited" those admitted after queueing (MaxWait), and
// result="blocked" those refused, with level naming the level that refused
// (global, user, ip or system). Passed and waited calls carry
// level="global". Their sum is therefore every call to Entry on that
// resource, and
//
//	sum(rate(flowgate_requests_total{result="blocked"}[5m]))
//	  / sum(rate(flowgate_requests_total[5m]))
//
// is the rejection ratio the alert rules and the dashboard use.
//
// Every series that can appear for a resource (each result, and blocked at
// each level) is exported as 0 from the first scrape, so rate() and
// absent-series alerts see a complete picture. Resources are those that
// have, or once had, a rule (a call to a resource without rules is not
// counted), so the label set is bounded by the rules file; labels never
// carry a user id, an IP or a raw path.
//
// # Optional sources
//
// Some metrics come from packages that sit beside the engine. Each is
// exported only when its source is given, so a series is never a made-up 0:
// CPU from [WithCPU] or [WithAdaptive], the token server's latency and
// breaker from [WithCluster], rule reload status from [WithReload], and
// firing alerts from [WithAlerts]. The sources are small interfaces with
// func adapters, so this package imports none of those packages; for
// example, for a rules.Watcher w and an adaptive.Controller c:
//
//	metrics.WithReload(metrics.ReloadFunc(func() metrics.ReloadStatus {
//		st := w.Status()
//		return metrics.ReloadStatus{Successful: st.OK, LastSuccess: st.LastGoodLoad}
//	}))
//	metrics.WithCPU(func() float64 { return c.State().Sample })
//
// # OpenTelemetry
//
// [RegisterOTel] observes the same information with asynchronous
// instruments (flowgate.requests, flowgate.active_requests,
// flowgate.rule.limit, flowgate.adaptive.factor, ...), modelled on
// aspnetcore.rate_limiting.*. The OTel API has no asynchronous histogram,
// so flowgate.request.duration, flowgate.request.time_in_queue and
// flowgate.cluster.request.duration come from [NewOTelProducer], which an
// SDK reader takes with sdkmetric.WithProducer.
package metrics
