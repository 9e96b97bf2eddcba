// Package sentinel converts Alibaba Sentinel rule files into one flowgate
// rules document, so a service moving from Sentinel keeps the rules it has.
//
// Two dialects are read, told apart by their fields: Java Sentinel's
// FlowRule, DegradeRule, ParamFlowRule, AuthorityRule and SystemRule arrays
// as its dashboard stores them in Nacos, Apollo, ZooKeeper or etcd (and its
// API gateway adapter's GatewayFlowRule and ApiDefinition arrays), and
// sentinel-golang's flow, circuit-breaker, hotspot, isolation and system
// arrays as its datasources parse them (JSON, or the same arrays in YAML).
// QPS, warm-up and hotspot rules map to the Sentinel-compatible algorithms
// sentinel_window, sentinel_warm_up and sentinel_hotspot; system CPU rules
// to the document's adaptive section (systemCPU). Each source rule gets one
// Report: Exact (flowgate behaves the same), Approx (what differs, with the
// figure) or Cannot (why; the rule is left out of the document). A field
// that no Sentinel rule of the kind has is listed in Report.Unknown and
// makes the rule Approx at best; a resource named like an HTTP route is
// warned about (Report.Warnings) or renamed (Options.RenameHTTP).
//
// The result is checked by rules.Parse, so what Import returns loads in an
// engine and is written the way `flowgate fmt` writes it.
package sentinel
