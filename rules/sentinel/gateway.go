package sentinel

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// Java Sentinel's API gateway rules (sentinel-api-gateway-adapter-common:
// GatewayFlowRule, GatewayParamFlowItem, ApiDefinition). The gateway
// adapter turns every GatewayFlowRule into a ParamFlowRule
// (GatewayRuleConverter): count, grade, intervalSec as durationInSec,
// burst as burstCount, controlBehavior and maxQueueingTimeoutMs; a rule
// without paramItem counts one constant value, which is the whole
// resource.

// The parse strategies of a GatewayParamFlowItem.
const (
	parseClientIP = iota
	parseHost
	parseHeader
	parseURLParam
	parseCookie
)

// gatewayFlow maps a GatewayFlowRule as its ParamFlowRule decides.
func gatewayFlow(e *element, rep *Report) ([]flow.Rule, notes) {
	var n notes
	if e.whole("resourceMode", 0, 0, 1) == 1 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("resourceMode 1: %q names a gateway API definition, a group of paths; "+
			"the rule applies to the requests flowhttp.WithResource names %q", rep.Resource, rep.Resource))
	} else {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("resourceMode 0: %q is a gateway route id; the rule applies to the requests "+
			"flowhttp.WithResource names %q (by default flowhttp names a request by its ServeMux pattern)", rep.Resource, rep.Resource))
	}
	grade := e.whole("grade", 1, 0, 1)
	count := e.num("count", 0)
	r := flow.Rule{ID: idOf(e), Resource: e.str("resource"), Limit: count}
	if it := e.object("paramItem"); it != nil {
		if why := gatewayParam(it, &r, rep); why != "" {
			return cannot("%s", why)
		}
	}
	if grade == 0 {
		r.Algorithm = flow.AlgoConcurrency
		return []flow.Rule{r}, n
	}
	if e.boolean("clusterMode") {
		return javaClusterParam(e, r, "intervalSec", "interval", "intervalUnit", "burst", "controlBehavior", "maxQueueingTimeoutMs")
	}
	dur := gatewayInterval(e)
	switch {
	case dur < 1:
		return cannot("intervalSec %d: Sentinel's parameter rules need a window of at least 1s", dur)
	case dur > int64(math.MaxInt64/time.Second):
		return cannot("interval of %ds: longer than a Go duration holds (about 292 years)", dur)
	}
	behavior := e.whole("controlBehavior", 0, 0, 2)
	throttling := behavior == 2
	if behavior == 1 {
		// ParamFlowChecker throttles on 2 and rejects on anything else.
		n.add("controlBehavior 1 (warm-up) is read as 0 (reject): the parameter rule Java makes of a gateway rule has no warm-up")
	}
	hotspotRule(&r, dur, throttling, e.whole("maxQueueingTimeoutMs", 500, 0, math.MaxInt32), float64(e.whole("burst", 0, 0, math.MaxInt32)))
	if throttling {
		n.add("Java rounds each value's spacing to the nearest millisecond; sentinel_hotspot floors it, as sentinel-golang does")
	} else {
		n.add("sentinel_hotspot is sentinel-golang's port of Java's per-value bucket, measured against sentinel-golang only")
	}
	return []flow.Rule{r}, n
}

// gatewayInterval is GatewayFlowRule.getIntervalSec: interval in
// intervalUnit (seconds, minutes, hours, days; the dashboard's form) when
// both are set, else intervalSec (default 1).
func gatewayInterval(e *element) int64 {
	if e.has("interval") && e.has("intervalUnit") {
		v := e.whole("interval", 1, 0, math.MaxInt32)
		return v * []int64{1, 60, 3600, 86400}[e.whole("intervalUnit", 0, 0, 3)]
	}
	return e.whole("intervalSec", 1, 0, math.MaxInt32)
}

// gatewayParam sets r's level and param from a paramItem; it returns why
// the item has no counterpart, or "".
func gatewayParam(it *element, r *flow.Rule, rep *Report) string {
	strategy := it.whole("parseStrategy", 0, 0, 4)
	field := it.str("fieldName")
	if p := it.str("pattern"); p != "" {
		return fmt.Sprintf("paramItem.pattern %q (matchStrategy %d): Java limits only the values that match it and lets the rest share "+
			"one huge quota; flowgate's param rules count every value alike (for an exact value, write a param rule with a high limit and "+
			"that value in items)", p, it.whole("matchStrategy", 0, 0, 3))
	}
	if strategy != parseClientIP && field == "" && strategy != parseHost {
		return "paramItem.fieldName is empty: Java needs the header, URL parameter or cookie to read"
	}
	switch strategy {
	case parseClientIP:
		r.Level = flow.LevelIP
	case parseHost:
		return "paramItem.parseStrategy 1 (the request's Host): flowhttp reads no parameter from the Host; " +
			"a param-level rule with flow.WithParam(\"host\", r.Host) in your own middleware decides as this rule does"
	default:
		r.Level, r.Param = flow.LevelParam, field
		src := map[int64]string{parseHeader: "ParamFromHeader", parseURLParam: "ParamFromQuery", parseCookie: "ParamFromCookie"}[strategy]
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("param %q: have flowhttp read it with flowhttp.WithParams(flowhttp.%s(%q, %q))",
			field, src, field, field))
	}
	return ""
}

// gatewayAPI refuses an ApiDefinition: it names a group of path
// predicates, and flowgate names resources by route, not by path match.
func gatewayAPI(e *element) ([]flow.Rule, notes) {
	var pats []string
	for _, it := range e.array("predicateItems") {
		if p := it.str("pattern"); p != "" {
			pats = append(pats, p)
		}
		for _, sub := range it.array("items") {
			if p := sub.str("pattern"); p != "" {
				pats = append(pats, p)
			}
		}
	}
	return cannot("a gateway API definition (%q) groups request paths (%s) under one name for gateway flow rules; flowgate names "+
		"resources by route and matches no paths: name the requests of those routes %q with flowhttp.WithResource "+
		"(then the gateway flow rules on %q apply to them), or write each rule on each route pattern",
		e.str("apiName"), strings.Join(pats, ", "), e.str("apiName"), e.str("apiName"))
}
