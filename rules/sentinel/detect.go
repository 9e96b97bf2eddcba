package sentinel

import (
	"strings"

	"github.com/flowgate/flowgate/flow"
)

// Fields that only one dialect uses: Java's rules count with "count" and
// "grade", sentinel-golang's with "threshold" and typed enums.
var javaMarkers = []string{"count", "grade", "limitApp", "paramIdx", "paramFlowItemList", "timeWindow",
	"slowRatioThreshold", "clusterMode", "highestSystemLoad", "highestCpuUsage", "avgRt", "maxThread", "qps",
	"apiName", "predicateItems", "resourceMode", "intervalSec", "intervalUnit", "burst", "maxQueueingTimeoutMs", "paramItem"}

func hasAny(e *element, keys ...string) bool {
	for _, k := range keys {
		if e.has(k) {
			return true
		}
	}
	return false
}

// unwrap returns the rule inside a dashboard entity: the dashboard keeps
// ParamFlowRule and AuthorityRule as {"app": ..., "rule": {...}}.
func unwrap(e *element) *element {
	if !e.has("resource") && e.has("rule") {
		if in := e.object("rule"); in != nil {
			return in
		}
	}
	return e
}

// kindOf tells the dialect and kind of one rule from its fields.
func kindOf(e *element, force Dialect) (Dialect, string) {
	d := force
	if d == Auto {
		d = Golang
		if hasAny(e, javaMarkers...) {
			d = Java
		}
	}
	if d == Java {
		switch {
		case hasAny(e, "apiName", "predicateItems"):
			return d, "gateway-api"
		case hasAny(e, "resourceMode", "intervalSec", "interval", "intervalUnit", "burst", "maxQueueingTimeoutMs", "paramItem"):
			return d, "gateway-flow"
		case hasAny(e, "paramIdx", "paramFlowItemList"):
			return d, "param-flow"
		case hasAny(e, "highestSystemLoad", "highestCpuUsage", "avgRt", "maxThread", "qps") && !e.has("resource"):
			return d, "system"
		case hasAny(e, "timeWindow", "slowRatioThreshold", "minRequestAmount", "statIntervalMs"):
			return d, "degrade"
		case hasAny(e, "count", "grade", "controlBehavior", "clusterMode"):
			return d, "flow"
		case e.has("resource") && hasAny(e, "limitApp", "strategy"):
			return d, "authority"
		}
		return d, ""
	}
	switch {
	case hasAny(e, "paramIndex", "paramKey", "specificItems", "burstCount", "durationInSec", "paramsMaxCapacity"):
		return d, "hotspot"
	case e.has("triggerCount"):
		return d, "system"
	case hasAny(e, "retryTimeoutMs", "maxAllowedRtMs", "probeNum", "statSlidingWindowBucketCount", "minRequestAmount", "statIntervalMs", "strategy"):
		return d, "circuit-breaker"
	case hasAny(e, "tokenCalculateStrategy", "controlBehavior", "relationStrategy", "refResource", "maxQueueingTimeMs",
		"warmUpPeriodSec", "warmUpColdFactor", "statIntervalInMs"):
		return d, "flow"
	case e.has("metricType") && e.has("resource"):
		return d, "isolation"
	case e.has("threshold") && e.has("resource"):
		return d, "flow"
	}
	return d, ""
}

// convert maps one source rule. Malformed fields go to the element's
// error list; the report is then not used.
func convert(e *element, opts Options, sys *system) (Report, []flow.Rule) {
	in := unwrap(e)
	d, kind := kindOf(in, opts.Dialect)
	rep := Report{File: e.file, Index: e.index, Kind: d.String() + " " + kind, Resource: in.str("resource")}
	if kind == "gateway-api" {
		rep.Resource = in.str("apiName")
	}
	rs, n, ok := mapRule(in, rep.Kind, opts, sys, &rep)
	if !ok {
		e.fail("", "cannot tell which %s rule this is (fields: %s)", dialectName(d, opts.Dialect, e.hint), strings.Join(in.keys(), ", "))
		return rep, nil
	}
	if d == Java && in.boolean("regex") {
		rs, n = cannot("regex: the resource is a regular expression (Sentinel matches every resource it matches); flowgate names resources exactly")
	}
	rename(&rep, rs, opts)
	if rep.Unknown = unknownFields(e, in, rep.Kind); len(rep.Unknown) > 0 {
		n.add("%s", unknownNote(rep.Unknown))
	}
	if rs == nil {
		rep.Verdict, rep.Note = Cannot, strings.Join(n, "; ")
		return rep, nil
	}
	rep.Verdict, rep.Note = n.verdict()
	return rep, rs
}

// mapRule maps one source rule of kind ("java flow"...); ok is false for
// no kind the import knows.
func mapRule(in *element, kind string, opts Options, sys *system, rep *Report) (rs []flow.Rule, n notes, ok bool) {
	switch kind {
	case "java flow":
		rs, n = javaFlow(in, opts)
	case "java degrade":
		rs, n = javaDegrade(in)
	case "java param-flow":
		rs, n = javaParamFlow(in, opts)
	case "java authority":
		rs, n = javaAuthority(in)
	case "java system":
		rs, n = javaSystem(in, sys)
	case "go flow":
		rs, n = goFlow(in)
	case "go circuit-breaker":
		rs, n = goBreaker(in)
	case "go hotspot":
		rs, n = goHotspot(in, opts)
	case "go isolation":
		rs, n = goIsolation(in)
	case "go system":
		rs, n = goSystem(in, sys)
	case "java gateway-flow":
		rs, n = gatewayFlow(in, rep)
	case "java gateway-api":
		rs, n = gatewayAPI(in)
	default:
		return nil, nil, false
	}
	return rs, n, true
}

// cannot is what a mapping returns for a rule with no counterpart.
func cannot(format string, args ...any) ([]flow.Rule, notes) {
	var n notes
	n.add(format, args...)
	return nil, n
}

// dialectName names what a rule whose kind was not found was read as: the
// dialect given, else that of the file's rules before it, else both
// (detection falls back to sentinel-golang, which is no finding).
func dialectName(d, force, hint Dialect) string {
	switch {
	case force == Auto && hint == Java:
		return "Java Sentinel (as the file's rules before it)"
	case force == Auto && hint == Golang:
		return "sentinel-golang (as the file's rules before it)"
	case force == Auto:
		return "Sentinel (Java or sentinel-golang)"
	case d == Java:
		return "Java Sentinel"
	}
	return "sentinel-golang"
}
