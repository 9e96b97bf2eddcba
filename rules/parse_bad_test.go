package rules

import (
	"errors"
	"strings"
	"testing"
)

// problem is one expected problem: where, and a fragment of what.
type problem struct{ path, msg string }

// badDocs is the corpus of documents Parse must refuse, with every problem
// each one has. schema_test.go checks that the JSON Schema refuses them too.
var badDocs = []struct {
	name string
	doc  string
	want []problem
}{
	// syntax
	{"empty", ``, []problem{{"", "empty document"}}},
	{"whitespace", " \n\t ", []problem{{"", "empty document"}}},
	{"trailing comma", "{\"rules\": [\n  {\"id\": \"a\",}\n]}", []problem{{"line 2, column 14", "invalid character '}'"}}},
	{"truncated", "{\"rules\": [\n  {\"id\": \"a\"", []problem{{"line 2, column 13", "unexpected end of input"}}},
	{"garbage after", `{"rules": []} x`, []problem{{"line 1, column 15", "after top-level value"}}},
	{"single quotes", `{'rules': []}`, []problem{{"line 1, column 2", "invalid character '\\''"}}},
	{"bare word", "{\"rules\": [\n\n    nope]}", []problem{{"line 3, column 6", "invalid character 'o'"}}},
	{"nan literal", `{"rules": [{"limit": NaN}]}`, []problem{{"line 1, column 22", "invalid character 'N'"}}},
	{"comment", "{\"rules\": [] // none\n}", []problem{{"line 1, column 14", "invalid character '/'"}}},
	// document shape
	{"not an object", `[]`, []problem{{"document", "must be an object, got array"}}},
	{"rules missing", `{}`, []problem{{"rules", "required"}}},
	{"rules null", `{"rules": null}`, []problem{{"rules", "must be an array of rules, got null"}}},
	{"rules object", `{"rules": {"id": "a"}}`, []problem{{"rules", "must be an array of rules, got object"}}},
	{"unknown top-level", `{"rules": [], "rule": []}`, []problem{{"rule", `unknown field (did you mean "rules"?)`}}},
	{"top-level twice", `{"rules": [], "rules": []}`, []problem{{"rules", "given more than once"}}},
	{"rule not object", `{"rules": ["a"]}`, []problem{{"rules[0]", `must be an object, got string "a"`}}},
	{"schema not string", `{"$schema": 1, "rules": []}`, []problem{{"$schema", "must be a string"}}},
	// required fields and types
	{"empty rule", `{"rules": [{}]}`, []problem{
		{"rules[0]: resource", "required"}, {"rules[0]: algorithm", "required"}, {"rules[0]: limit", "required"}}},
	{"limit string", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": "10"}]}`,
		[]problem{{`rules[0] (id "a"): limit`, `must be a number, got string "10"`}}},
	{"id number", `{"rules": [{"id": 7, "resource": "r", "algorithm": "token_bucket", "limit": 1}]}`,
		[]problem{{"rules[0]: id", "must be a string, got number 7"}}},
	{"resource empty", `{"rules": [{"id": "a", "resource": "", "algorithm": "token_bucket", "limit": 1}]}`,
		[]problem{{`rules[0] (id "a"): resource`, "must not be empty"}}},
	{"adaptive string", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "adaptive": "yes"}]}`,
		[]problem{{`rules[0] (id "a"): adaptive`, `must be true or false, got string "yes"`}}},
	{"shadow string", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "shadow": "yes"}]}`,
		[]problem{{`rules[0] (id "a"): shadow`, `must be true or false, got string "yes"`}}},
	{"document shadow number", `{"shadow": 1, "rules": []}`,
		[]problem{{"shadow", "must be true or false, got number 1"}}},
	{"window number", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "window": 1000}]}`,
		[]problem{{`rules[0] (id "a"): window`, `must be a duration string such as "1s", got number 1000`}}},
	{"buckets fraction", `{"rules": [{"id": "a", "resource": "r", "algorithm": "sliding_window", "limit": 1, "buckets": 2.5}]}`,
		[]problem{{`rules[0] (id "a"): buckets`, "must be a whole number, got 2.5"}}},
	{"cluster not object", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "cluster": true}]}`,
		[]problem{{`rules[0] (id "a"): cluster`, "must be an object, got boolean true"}}},
	// units
	{"unknown unit", `{"rules": [{}, {}, {}, {"id": "orders", "resource": "r", "algorithm": "token_bucket", "limit": 1, "window": "10x"}]}`,
		[]problem{{"rules[0]: resource", "required"}, {"rules[0]: algorithm", "required"}, {"rules[0]: limit", "required"},
			{"rules[1]: resource", "required"}, {"rules[1]: algorithm", "required"}, {"rules[1]: limit", "required"},
			{"rules[2]: resource", "required"}, {"rules[2]: algorithm", "required"}, {"rules[2]: limit", "required"},
			{`rules[3] (id "orders"): window`, `"10x": unknown unit "x"`}}},
	{"missing unit", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "window": "10"}]}`,
		[]problem{{`rules[0] (id "a"): window`, `"10": missing unit`}}},
	{"exponent in duration", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "window": "1e308s"}]}`,
		[]problem{{`rules[0] (id "a"): window`, `"1e308s": unknown unit "e"`}}},
	{"duration overflow", `{"rules": [{"id": "a", "resource": "r", "algorithm": "warm_up", "limit": 1, "warmup": "99999999999h"}]}`,
		[]problem{{`rules[0] (id "a"): warmup`, `"99999999999h": out of range`}}},
	{"duration over a year", `{"rules": [{"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": 1, "window": "9000h"}]}`,
		[]problem{{`rules[0] (id "a"): window`, `"9000h": out of range`}}},
	{"empty duration", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "maxWait": ""}]}`,
		[]problem{{`rules[0] (id "a"): maxWait`, `"": empty duration`}}},
	// ranges
	{"limit zero", `{"rules": [{"resource": "r", "algorithm": "token_bucket", "limit": 0}]}`,
		[]problem{{"rules[0]: limit", "must be > 0"}}},
	{"limit negative", `{"rules": [{"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": -5}]}`,
		[]problem{{`rules[0] (id "a"): limit`, "must be > 0"}}},
	{"limit overflow", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1e400}]}`,
		[]problem{{`rules[0] (id "a"): limit`, "1e400: out of range"}}},
	{"limit absurd", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1e308}]}`,
		[]problem{{`rules[0] (id "a"): limit`, "1e308: out of range (at most 1e15)"}}},
	{"window negative", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "window": "-1s"}]}`,
		[]problem{{`rules[0] (id "a"): window`, `"-1s": must not be negative`}}},
	{"window zero", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "window": "0s"}]}`,
		[]problem{{`rules[0] (id "a"): window`, "must be > 0"}}},
	{"maxWait negative", `{"rules": [{"id": "a", "resource": "r", "algorithm": "leaky_bucket", "limit": 1, "maxWait": "-5ms"}]}`,
		[]problem{{`rules[0] (id "a"): maxWait`, `"-5ms": must not be negative`}}},
	{"coldFactor one", `{"rules": [{"id": "a", "resource": "r", "algorithm": "warm_up", "limit": 1, "warmup": "1s", "coldFactor": 1}]}`,
		[]problem{{`rules[0] (id "a"): coldFactor`, "must be a finite number > 1"}}},
	{"buckets too many", `{"rules": [{"id": "a", "resource": "r", "algorithm": "sliding_window", "limit": 1, "buckets": 100000}]}`,
		[]problem{{`rules[0] (id "a"): buckets`, "must be in [1, 3600]"}}},
	{"maxKeys negative", `{"rules": [{"id": "a", "resource": "r", "level": "ip", "algorithm": "token_bucket", "limit": 1, "maxKeys": -1}]}`,
		[]problem{{`rules[0] (id "a"): maxKeys`, "must be >= 0"}}},
	{"maxKeys huge", `{"rules": [{"id": "a", "resource": "r", "level": "ip", "algorithm": "token_bucket", "limit": 1, "maxKeys": 1e12}]}`,
		[]problem{{`rules[0] (id "a"): maxKeys`, "out of range"}}},
	{"maxKeys past the bound", `{"rules": [{"id": "a", "resource": "r", "level": "ip", "algorithm": "token_bucket", "limit": 1, "maxKeys": 268435456}]}`,
		[]problem{{`rules[0] (id "a"): maxKeys`, "must be at most 268435455"}}},
	{"concurrency fraction", `{"rules": [{"id": "a", "resource": "r", "algorithm": "concurrency", "limit": 2.5}]}`,
		[]problem{{`rules[0] (id "a"): limit`, "must be a whole number for concurrency"}}},
	{"sliding log too big", `{"rules": [{"id": "a", "resource": "r", "algorithm": "sliding_log", "limit": 1e9}]}`,
		[]problem{{`rules[0] (id "a"): limit`, "must be <= 1048576 for sliding_log"}}},
	// The engine's problems arrive as values (flow.RuleError), so an id
	// shaped like a place and a field stays whole.
	{"engine problem, tricky id", `{"rules": [{"id": "a\"): burst: ", "resource": "r", "algorithm": "sliding_log", "limit": 1e9}]}`,
		[]problem{{`rules[0] (id "a\"): burst: "): limit`, "must be <= 1048576 for sliding_log"}}},
	{"burst negative", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "burst": -1}]}`,
		[]problem{{`rules[0] (id "a"): burst`, "must be a finite number >= 0"}}},
	// unknown names and fields
	{"unknown algorithm", `{"rules": [{"id": "a", "resource": "r", "algorithm": "gcra", "limit": 1}]}`,
		[]problem{{`rules[0] (id "a"): algorithm`, `unknown "gcra" (valid: token_bucket, warm_up, leaky_bucket, fixed_window, sliding_window, sliding_log, concurrency, circuit_breaker, adaptive_concurrency, allow, deny, sentinel_window, sentinel_warm_up, sentinel_hotspot, client_throttle, retry_budget)`}}},
	{"adaptive with limit and window", `{"rules": [{"id": "a", "resource": "r", "algorithm": "adaptive_concurrency", "limit": 5, "window": "1s"}]}`,
		[]problem{{`rules[0] (id "a"): limit`, `does not apply to adaptive_concurrency`}, {`rules[0] (id "a"): window`, `does not apply to adaptive_concurrency`}}},
	{"adaptive fields elsewhere", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 5, "initialLimit": 3, "tolerance": 2, "reserve": {"critical": 0.1}}]}`,
		[]problem{{`rules[0] (id "a"): initialLimit`, `only for adaptive_concurrency rules`}, {`rules[0] (id "a"): tolerance`, `only for adaptive_concurrency rules`}, {`rules[0] (id "a"): reserve`, `only for concurrency and adaptive_concurrency rules`}}},
	{"adaptive min above max", `{"rules": [{"id": "a", "resource": "r", "algorithm": "adaptive_concurrency", "minLimit": 50, "maxLimit": 10}]}`,
		[]problem{{`rules[0] (id "a"): minLimit`, `must be <= maxLimit (10), not 50`}}},
	{"adaptive bad values", `{"rules": [{"id": "a", "resource": "r", "algorithm": "adaptive_concurrency", "initialLimit": 0, "tolerance": "high", "smoothing": 1.5}]}`,
		[]problem{{`rules[0] (id "a"): initialLimit`, `must be > 0 (leave it out for the default)`}, {`rules[0] (id "a"): tolerance`, `"high"`}, {`rules[0] (id "a"): smoothing`, `must be in (0, 1], not 1.5`}}},
	{"reserve unknown class", `{"rules": [{"id": "a", "resource": "r", "algorithm": "concurrency", "limit": 5, "reserve": {"low": 0.1, "critical": 1.5}}]}`,
		[]problem{{`rules[0] (id "a"): reserve.low`, `unknown`}, {`rules[0] (id "a"): reserve.critical`, `must be in [0, 1), not 1.5`}}},
	{"reserve adds up to 1", `{"rules": [{"id": "a", "resource": "r", "algorithm": "concurrency", "limit": 5, "reserve": {"critical": 0.5, "normal": 0.5}}]}`,
		[]problem{{`rules[0] (id "a"): reserve`, `critical+high+normal must be < 1`}}},
	{"unknown level", `{"rules": [{"id": "a", "resource": "r", "level": "tenant", "algorithm": "token_bucket", "limit": 1}]}`,
		[]problem{{`rules[0] (id "a"): level`, `unknown "tenant" (valid: global, user, ip, param)`}}},
	{"system level", `{"rules": [{"id": "a", "resource": "r", "level": "system", "algorithm": "token_bucket", "limit": 1}]}`,
		[]problem{{`rules[0] (id "a"): level`, `unknown "system"`}}},
	{"empty key", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "": 5}]}`,
		[]problem{{`rules[0] (id "a"): ""`, "unknown field"}}},
	{"odd key", `{"rules": [], "rate limit": 5}`, []problem{{`"rate limit"`, "unknown field"}}},
	{"unknown field", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "rate": 5}]}`,
		[]problem{{`rules[0] (id "a"): rate`, "unknown field"}}},
	{"wrong case field", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "maxwait": "1s"}]}`,
		[]problem{{`rules[0] (id "a"): maxwait`, `unknown field (did you mean "maxWait"?)`}}},
	{"unknown cluster field", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "cluster": {"mode": "global"}}]}`,
		[]problem{{`rules[0] (id "a"): cluster.mode`, "unknown field"}}},
	{"unknown cluster threshold", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "cluster": {"threshold": "avg_local"}}]}`,
		[]problem{{`rules[0] (id "a"): cluster.threshold`, `unknown "avg_local" (valid: global, per_instance)`}}},
	{"unknown cluster fallback", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "cluster": {"fallback": "retry"}}]}`,
		[]problem{{`rules[0] (id "a"): cluster.fallback`, `unknown "retry" (valid: local, allow, deny)`}}},
	{"field twice", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "limit": 2}]}`,
		[]problem{{`rules[0] (id "a"): limit`, "given more than once"}}},
	// duplicates and wrong combinations
	{"duplicate ids", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1}, {"id": "a", "resource": "s", "algorithm": "token_bucket", "limit": 1}]}`,
		[]problem{{`rules[1] (id "a"): id`, "duplicate of rules[0]"}}},
	{"warmup on token bucket", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "warmup": "10s"}]}`,
		[]problem{{`rules[0] (id "a"): warmup`, "only for warm_up and sentinel_warm_up rules"}}},
	{"warm_up without warmup", `{"rules": [{"id": "a", "resource": "r", "algorithm": "warm_up", "limit": 1}]}`,
		[]problem{{`rules[0] (id "a"): warmup`, "must be > 0 for warm_up rules"}}},
	{"coldFactor on window", `{"rules": [{"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": 1, "coldFactor": 3}]}`,
		[]problem{{`rules[0] (id "a"): coldFactor`, "only for warm_up and sentinel_warm_up rules"}}},
	{"maxKeys on global", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 1, "maxKeys": 10}]}`,
		[]problem{{`rules[0] (id "a"): maxKeys`, "only for user, ip and param levels"}}},
	{"idleTTL on global", `{"rules": [{"id": "a", "resource": "r", "level": "global", "algorithm": "token_bucket", "limit": 1, "idleTTL": "1m"}]}`,
		[]problem{{`rules[0] (id "a"): idleTTL`, "only for user, ip and param levels"}}},
	{"burst on fixed window", `{"rules": [{"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": 10, "burst": 20}]}`,
		[]problem{{`rules[0] (id "a"): burst`, "only for token_bucket and sentinel_hotspot rules"}}},
	{"buckets on sliding log", `{"rules": [{"id": "a", "resource": "r", "algorithm": "sliding_log", "limit": 10, "buckets": 5}]}`,
		[]problem{{`rules[0] (id "a"): buckets`, "only for sliding_window and circuit_breaker rules"}}},
	{"maxWait on concurrency", `{"rules": [{"id": "a", "resource": "r", "algorithm": "concurrency", "limit": 10, "maxWait": "1s"}]}`,
		[]problem{{`rules[0] (id "a"): maxWait`, "not supported for concurrency rules"}}},
	{"maxWait 0s on concurrency", `{"rules": [{"id": "a", "resource": "r", "algorithm": "concurrency", "limit": 10, "maxWait": "0s"}]}`,
		[]problem{{`rules[0] (id "a"): maxWait`, "not supported for concurrency rules"}}},
	{"window on concurrency", `{"rules": [{"id": "a", "resource": "r", "algorithm": "concurrency", "limit": 10, "window": "2s"}]}`,
		[]problem{{`rules[0] (id "a"): window`, "not supported for concurrency rules"}}},
	{"window 0s on concurrency", `{"rules": [{"id": "a", "resource": "r", "algorithm": "concurrency", "limit": 10, "window": "0s"}]}`,
		[]problem{{`rules[0] (id "a"): window`, "not supported for concurrency rules"}}},
	{"resource blank", `{"rules": [{"id": "a", "resource": " \t ", "algorithm": "token_bucket", "limit": 1}]}`,
		[]problem{{`rules[0] (id "a"): resource`, "must not be empty or only white space"}}},
	{"resource invalid UTF-8", "{\"rules\": [{\"id\": \"a\", \"resource\": \"r\xff\", \"algorithm\": \"token_bucket\", \"limit\": 1}]}",
		[]problem{{`rules[0] (id "a"): resource`, "not valid UTF-8"}}},
	{"resource lone surrogate", `{"rules": [{"id": "a", "resource": "r\udc00", "algorithm": "token_bucket", "limit": 1}]}`,
		[]problem{{`rules[0] (id "a"): resource`, "not valid UTF-8"}}},
	{"explicit zero burst", `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 10, "burst": 0}]}`,
		[]problem{{`rules[0] (id "a"): burst`, "must be > 0 (leave it out for the default)"}}},
	{"many problems at once", `{"rules": [{"id": "x", "resource": 5, "algorithm": "token_bucket", "limit": -1, "window": "5y", "extra": 1}, {"resource": "r", "algorithm": "nope", "limit": 1, "warmup": "1s"}]}`,
		[]problem{{`rules[0] (id "x"): resource`, "must be a string"}, {`rules[0] (id "x"): window`, `unknown unit "y"`},
			{`rules[0] (id "x"): extra`, "unknown field"}, {`rules[0] (id "x"): limit`, "must be > 0"},
			{"rules[1]: algorithm", `unknown "nope"`}}},
	// sections
	{"adaptive unknown field", `{"rules": [], "adaptive": {"target": 0.8}}`,
		[]problem{{"adaptive.target", "unknown field"}}},
	{"adaptive cpuTarget above 1", `{"rules": [], "adaptive": {"cpuTarget": 80}}`,
		[]problem{{"adaptive.cpuTarget", "must be in (0, 1), got 80"}}},
	{"adaptive band inverted", `{"rules": [], "adaptive": {"cpuTarget": 0.8, "bandLow": 0.9, "bandHigh": 0.7}}`,
		[]problem{{"adaptive.bandLow", "must be below bandHigh 0.7, got 0.9"}, {"adaptive.bandHigh", "must be >= cpuTarget 0.8, got 0.7"}}},
	{"adaptive cpuSource unknown", `{"rules": [], "adaptive": {"cpuSource": "machine"}}`,
		[]problem{{"adaptive.cpuSource", `must be auto, cgroup, process or host, got "machine"`}}},
	{"adaptive period unit", `{"rules": [], "adaptive": {"period": "250"}}`,
		[]problem{{"adaptive.period", `"250": missing unit`}}},
	{"adaptive not object", `{"rules": [], "adaptive": true}`,
		[]problem{{"adaptive", "must be an object, got boolean true"}}},
	{"alerting ratio negative", `{"rules": [], "alerting": {"rejectionRatio": -0.1}}`,
		[]problem{{"alerting.rejectionRatio", "must be in (0, 1], got -0.1"}}},
	{"alerting resolve above fire", `{"rules": [], "alerting": {"rejectionRatio": 0.3, "resolveRatio": 0.5}}`,
		[]problem{{"alerting.resolveRatio", "must be <= rejectionRatio"}}},
	{"alerting window too short", `{"rules": [], "alerting": {"window": "10ms"}}`,
		[]problem{{"alerting.window", `must be >= interval 10s, got 10ms`}}},
	{"alerting minRequests negative", `{"rules": [], "alerting": {"minRequests": -3}}`,
		[]problem{{"alerting.minRequests", "must be >= 0"}}},
	{"alerting webhook not url", `{"rules": [], "alerting": {"webhook": "alerts.example.com/hook"}}`,
		[]problem{{"alerting.webhook", "must be an absolute http or https URL"}}},
	{"alerting for typo", `{"rules": [], "alerting": {"fr": "30s"}}`,
		[]problem{{"alerting.fr", `unknown field (did you mean "for"?)`}}},
	// circuit breakers: strict both ways
	{"breaker with limit", `{"rules": [{"id": "b", "resource": "r", "algorithm": "circuit_breaker", "strategy": "error_ratio", "threshold": 0.5, "openFor": "5s", "limit": 10, "maxWait": "0s", "adaptive": false}]}`,
		[]problem{{`rules[0] (id "b"): limit`, "not for circuit_breaker rules"}, {`rules[0] (id "b"): maxWait`, "not for circuit_breaker rules"},
			{`rules[0] (id "b"): adaptive`, "not for circuit_breaker rules"}}},
	{"breaker with cluster", `{"rules": [{"id": "b", "resource": "r", "algorithm": "circuit_breaker", "strategy": "error_count", "threshold": 3, "openFor": "5s", "cluster": {}}]}`,
		[]problem{{`rules[0] (id "b"): cluster`, "not for circuit_breaker rules"}}},
	{"breaker fields on a limit", `{"rules": [{"id": "t", "resource": "r", "algorithm": "token_bucket", "limit": 1, "threshold": 0.5, "probes": 1}]}`,
		[]problem{{`rules[0] (id "t"): threshold`, "only for circuit_breaker rules"}, {`rules[0] (id "t"): probes`, "only for circuit_breaker rules"}}},
	{"breaker missing", `{"rules": [{"id": "b", "resource": "r", "algorithm": "circuit_breaker"}]}`,
		[]problem{{`rules[0] (id "b"): strategy`, "required"}, {`rules[0] (id "b"): threshold`, "required"}, {`rules[0] (id "b"): openFor`, "required"}}},
	{"breaker unknown strategy", `{"rules": [{"id": "b", "resource": "r", "algorithm": "circuit_breaker", "strategy": "errors", "threshold": 0.5, "openFor": "5s"}]}`,
		[]problem{{`rules[0] (id "b"): strategy`, `unknown "errors" (valid: error_ratio, error_count, slow_ratio)`}}},
	{"breaker ratio above 1", `{"rules": [{"id": "b", "resource": "r", "algorithm": "circuit_breaker", "strategy": "slow_ratio", "slowCall": "1s", "threshold": 2, "openFor": "5s"}]}`,
		[]problem{{`rules[0] (id "b"): threshold`, "must be a ratio in (0, 1]"}}},
	{"breaker slowCall missing", `{"rules": [{"id": "b", "resource": "r", "algorithm": "circuit_breaker", "strategy": "slow_ratio", "threshold": 0.5, "openFor": "5s"}]}`,
		[]problem{{`rules[0] (id "b"): slowCall`, "required for slow_ratio"}}},
	{"breaker slowCall elsewhere", `{"rules": [{"id": "b", "resource": "r", "algorithm": "circuit_breaker", "strategy": "error_count", "threshold": 2, "slowCall": "1s", "openFor": "5s"}]}`,
		[]problem{{`rules[0] (id "b"): slowCall`, "only for the slow_ratio strategy"}}},
	{"breaker count fraction", `{"rules": [{"id": "b", "resource": "r", "algorithm": "circuit_breaker", "strategy": "error_count", "threshold": 2.5, "openFor": "5s", "probes": 0}]}`,
		[]problem{{`rules[0] (id "b"): threshold`, "must be a whole count"}, {`rules[0] (id "b"): probes`, "must be > 0"}}},
}

func TestParseBadCorpus(t *testing.T) {
	if len(badDocs) < 40 {
		t.Fatalf("corpus has %d documents, want at least 40", len(badDocs))
	}
	for _, tc := range badDocs {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse accepted the document: %s", doc.Format())
			}
			got := Problems(err)
			for _, w := range tc.want {
				if !hasProblem(got, w) {
					t.Errorf("missing problem %q with %q in:\n%v", w.path, w.msg, err)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %d problems, want %d:\n%v", len(got), len(tc.want), err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Errorf("errors.As(*FieldError) failed for %v", err)
			}
		})
	}
}

// hasProblem reports whether one of got is at w.path exactly and mentions w.msg.
func hasProblem(got []error, w problem) bool {
	for _, e := range got {
		fe, ok := e.(*FieldError)
		if !ok || fe.Path() != w.path {
			continue
		}
		if strings.Contains(fe.Msg, w.msg) && e.Error() == joinPath(w.path, fe.Msg) {
			return true
		}
	}
	return false
}

func joinPath(path, msg string) string {
	if path == "" {
		return msg
	}
	return path + ": " + msg
}
