package sentinel

import (
	"fmt"
	"sort"
	"strings"
)

// The fields each kind of rule has in Sentinel's classes (Java
// com.alibaba.csp.sentinel.slots.*, sentinel-api-gateway-adapter-common;
// sentinel-golang v1.0.4's JSON names), read or not by the import. Any
// other field is reported as unknown: Sentinel may give it a meaning the
// import did not read (a gateway rule's intervalSec once went unread that
// way), so a rule with one is at best approx.
var knownFields = map[string][]string{
	"java flow": {"resource", "limitApp", "grade", "count", "strategy", "refResource", "controlBehavior", "warmUpPeriodSec",
		"maxQueueingTimeMs", "clusterMode", "clusterConfig", "regex"},
	"java degrade": {"resource", "limitApp", "grade", "count", "timeWindow", "minRequestAmount", "slowRatioThreshold",
		"statIntervalMs", "regex"},
	"java param-flow": {"resource", "limitApp", "grade", "paramIdx", "count", "controlBehavior", "maxQueueingTimeMs", "burstCount",
		"durationInSec", "paramFlowItemList", "clusterMode", "clusterConfig", "regex"},
	"java authority": {"resource", "limitApp", "strategy", "regex"},
	"java system":    {"resource", "limitApp", "highestSystemLoad", "highestCpuUsage", "qps", "avgRt", "maxThread", "regex"},
	"java gateway-flow": {"resource", "resourceMode", "grade", "count", "intervalSec", "interval", "intervalUnit", "controlBehavior",
		"burst", "maxQueueingTimeoutMs", "paramItem", "clusterMode", "clusterConfig"},
	"java gateway-api": {"apiName", "predicateItems"},
	"go flow": {"id", "resource", "tokenCalculateStrategy", "controlBehavior", "threshold", "relationStrategy", "refResource",
		"maxQueueingTimeMs", "warmUpPeriodSec", "warmUpColdFactor", "statIntervalInMs", "lowMemUsageThreshold",
		"highMemUsageThreshold", "memLowWaterMarkBytes", "memHighWaterMarkBytes"},
	"go circuit-breaker": {"id", "resource", "strategy", "retryTimeoutMs", "minRequestAmount", "statIntervalMs",
		"statSlidingWindowBucketCount", "maxAllowedRtMs", "threshold", "probeNum"},
	"go hotspot": {"id", "resource", "metricType", "controlBehavior", "paramIndex", "paramKey", "threshold", "maxQueueingTimeMs",
		"burstCount", "durationInSec", "paramsMaxCapacity", "specificItems"},
	"go isolation": {"id", "resource", "metricType", "threshold"},
	"go system":    {"id", "metricType", "triggerCount", "strategy"},
}

// The fields of nested objects, by field name.
var knownNested = map[string][]string{
	"clusterConfig": {"flowId", "thresholdType", "fallbackToLocalWhenFail", "strategy", "sampleCount", "windowIntervalMs",
		"resourceTimeout", "resourceTimeoutStrategy", "acquireRefuseStrategy", "clientOfflineTime"},
	"paramFlowItemList": {"object", "classType", "count"},
	"paramItem":         {"index", "parseStrategy", "fieldName", "pattern", "matchStrategy"},
}

// dashboardFields are what the Java dashboard stores beside a rule (its
// entity's bookkeeping), and what wraps a ParamFlowRule or AuthorityRule.
var dashboardFields = []string{"id", "app", "ip", "port", "gmtCreate", "gmtModified", "rule"}

// unknownFields lists the fields of a rule of kind (outer is the element
// as read, in the rule inside a dashboard wrapper) that no such Sentinel
// rule has, by path.
func unknownFields(outer, in *element, kind string) []string {
	var out []string
	if outer != in {
		out = unknownIn(outer, dashboardFields)
	}
	extra := knownFields[kind]
	if strings.HasPrefix(kind, "java ") {
		extra = append(extra[:len(extra):len(extra)], dashboardFields...)
	}
	out = append(out, unknownIn(in, extra)...)
	for key, fields := range knownNested {
		if !in.has(key) || !contains(knownFields[kind], key) {
			continue
		}
		// Read again quietly: a malformed value was reported by its reader.
		q := &element{file: in.file, index: in.index, prefix: in.prefix, raw: in.raw, errs: &problems{}}
		if raw := strings.TrimSpace(string(in.raw[key])); strings.HasPrefix(raw, "[") {
			for _, it := range q.array(key) {
				out = append(out, unknownIn(it, fields)...)
			}
		} else if sub := q.object(key); sub != nil {
			out = append(out, unknownIn(sub, fields)...)
		}
	}
	sort.Strings(out)
	return out
}

// unknownIn lists e's fields not in known, with e's path.
func unknownIn(e *element, known []string) []string {
	var out []string
	for k := range e.raw {
		if !contains(known, k) {
			out = append(out, e.prefix+k)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// unknownNote says what unknown fields do to a report.
func unknownNote(fields []string) string {
	return fmt.Sprintf("unknown field(s) %s ignored: Sentinel may give them a meaning this import does not read", strings.Join(fields, ", "))
}
