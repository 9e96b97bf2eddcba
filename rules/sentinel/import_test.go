package sentinel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

func loadFiles(t *testing.T, glob string) []File {
	t.Helper()
	names, err := filepath.Glob(glob)
	if err != nil || len(names) == 0 {
		t.Fatalf("no files match %s (%v)", glob, err)
	}
	var out []File
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, File{Name: filepath.Base(n), Data: data})
	}
	return out
}

// paramRulesParse reports whether this build's rules parser knows the
// "param" level and allow/deny lists (issue 17); the mappings that need
// them are checked only then.
func paramRulesParse() bool {
	_, lerr := flow.ParseLevel("param")
	_, aerr := flow.ParseAlgorithm("allow")
	return lerr == nil && aerr == nil
}

type want struct {
	file    string
	index   int
	verdict Verdict
	algo    string // the flowgate rule's algorithm, "" for Cannot
	param   bool   // needs issue 17's param level or lists
}

func checkImport(t *testing.T, res *Result, wants []want) {
	t.Helper()
	if got := len(res.Reports); got != len(wants) {
		t.Fatalf("got %d reports, want %d: %v", got, len(wants), res.Reports)
	}
	byID := map[string]flow.Rule{}
	for _, r := range res.Document.Rules() {
		byID[r.ID] = r
	}
	for i, w := range wants {
		rep := res.Reports[i]
		if rep.File != w.file || rep.Index != w.index {
			t.Errorf("report %d is %s[%d], want %s[%d]", i, rep.File, rep.Index, w.file, w.index)
			continue
		}
		if w.param && !paramRulesParse() {
			t.Logf("%s: param level / allow-deny not in this build's parser (issue 17): got %v", rep, rep.Verdict)
			continue
		}
		if rep.Verdict != w.verdict {
			t.Errorf("%s: verdict %v, want %v", rep, rep.Verdict, w.verdict)
			continue
		}
		if w.verdict == Cannot {
			if len(rep.IDs) != 0 || rep.Note == "" {
				t.Errorf("%s: a cannot must say why and write no rule", rep)
			}
			continue
		}
		if w.verdict == Approx && rep.Note == "" {
			t.Errorf("%s: approx without saying what differs", rep)
		}
		if len(rep.IDs) != 1 {
			t.Errorf("%s: wrote %d rules, want 1", rep, len(rep.IDs))
			continue
		}
		if w.algo == "" { // a system rule: the adaptive section
			if rep.IDs[0] != "adaptive.systemCPU" {
				t.Errorf("%s: written to %v, want adaptive.systemCPU", rep, rep.IDs)
			}
			continue
		}
		r, ok := byID[rep.IDs[0]]
		if !ok {
			t.Errorf("%s: rule %q not in the document", rep, rep.IDs[0])
			continue
		}
		if r.Algorithm.String() != w.algo {
			t.Errorf("%s: algorithm %v, want %s", rep, r.Algorithm, w.algo)
		}
	}
	// What Import returns is what `flowgate fmt` writes, and loads.
	out := res.Document.Format()
	again, err := rules.Parse(out)
	if err != nil {
		t.Fatalf("the imported document does not parse: %v\n%s", err, out)
	}
	if string(again.Format()) != string(out) {
		t.Errorf("not in fmt form:\n%s", out)
	}
	if err := flow.NewEngine().LoadRules(again.Rules()); err != nil {
		t.Errorf("an engine refuses the imported rules: %v", err)
	}
}

// TestImportGolangExamples imports the rule sets of sentinel-golang
// v1.0.4's example/ directory, written as its datasources read them.
func TestImportGolangExamples(t *testing.T) {
	res, err := Import(loadFiles(t, "testdata/golang/*.json"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkImport(t, res, []want{
		{"circuitbreaker_error_count.json", 0, Exact, "circuit_breaker", false},
		{"circuitbreaker_error_ratio.json", 0, Exact, "circuit_breaker", false},
		{"circuitbreaker_slow_rt_ratio.json", 0, Exact, "circuit_breaker", false},
		{"flow_qps.json", 0, Exact, "sentinel_window", false},
		{"flow_warm_up.json", 0, Exact, "sentinel_warm_up", false},
		{"hotspot_concurrency.json", 0, Exact, "concurrency", true},
		{"hotspot_qps_reject.json", 0, Exact, "sentinel_hotspot", true},
		{"hotspot_qps_reject.json", 1, Exact, "sentinel_hotspot", true},
		{"hotspot_qps_reject.json", 2, Exact, "sentinel_hotspot", true},
		{"hotspot_qps_throttling.json", 0, Exact, "sentinel_hotspot", true},
		{"hotspot_qps_throttling.json", 1, Exact, "sentinel_hotspot", true},
		{"isolation.json", 0, Exact, "concurrency", false},
		{"system.json", 0, Approx, "", false},
	})
	if a := res.Document.Adaptive; a == nil || a.SystemGuard.CPU != 0.8 {
		t.Errorf("adaptive section %+v, want systemCPU 0.8", a)
	}
	// Spot-check the figures carried over from the examples.
	for _, r := range res.Document.Rules() {
		if r.Resource == "abc" && r.Algorithm == flow.AlgoCircuitBreaker {
			if r.Window.String() != "5s" || r.OpenFor.String() != "3s" || r.MinRequests != 10 {
				t.Errorf("breaker %s: window %v openFor %v minRequests %d, want 5s 3s 10", r.ID, r.Window, r.OpenFor, r.MinRequests)
			}
		}
		if r.Algorithm == flow.AlgoSentinelWarmUp && (r.Limit != 100 || r.Warmup.String() != "10s" || r.ColdFactor != 3) {
			t.Errorf("warm-up %s: limit %v warmup %v coldFactor %v, want 100 10s 3", r.ID, r.Limit, r.Warmup, r.ColdFactor)
		}
		if r.Algorithm == flow.AlgoConcurrency && r.Resource == "abc" && r.Level == flow.LevelGlobal && r.Limit != 12 {
			t.Errorf("isolation: limit %v, want 12", r.Limit)
		}
	}
}

// TestImportJavaDashboard imports a Java dashboard export with every rule
// kind, in the shapes the dashboard stores (entities with app/ip/port;
// ParamFlowRule and AuthorityRule wrapped in "rule").
func TestImportJavaDashboard(t *testing.T) {
	res, err := Import(loadFiles(t, "testdata/java/*.json"), Options{ParamNames: map[int]string{0: "tenant"}})
	if err != nil {
		t.Fatal(err)
	}
	checkImport(t, res, []want{
		{"authority.json", 0, Exact, "allow", true},
		{"authority.json", 1, Exact, "deny", true},
		{"degrade.json", 0, Exact, "circuit_breaker", false},
		{"degrade.json", 1, Exact, "circuit_breaker", false},
		{"degrade.json", 2, Exact, "circuit_breaker", false},
		{"flow.json", 0, Exact, "sentinel_window", false},
		{"flow.json", 1, Approx, "sentinel_warm_up", false},
		{"flow.json", 2, Exact, "leaky_bucket", false},
		{"flow.json", 3, Approx, "sentinel_warm_up", false},
		{"flow.json", 4, Exact, "concurrency", false},
		{"flow.json", 5, Exact, "sentinel_window", true}, // refResource
		{"flow.json", 6, Approx, "sliding_window", false},
		{"flow.json", 7, Cannot, "", false}, // chain
		{"param-flow.json", 0, Approx, "sentinel_hotspot", true},
		{"param-flow.json", 1, Approx, "sentinel_hotspot", true},
		{"system.json", 0, Approx, "", false},
	})
	if a := res.Document.Adaptive; a == nil || a.SystemGuard.CPU != 0.8 {
		t.Errorf("adaptive section %+v, want systemCPU 0.8", a)
	}
	for _, r := range res.Document.Rules() {
		if r.Resource == "GET /cart" && (r.Cluster == nil || r.Cluster.Threshold != "global" || r.Cluster.Fallback != "local") {
			t.Errorf("cluster rule: got %+v, want global threshold, local fallback", r.Cluster)
		}
		if r.Resource == "POST /pay" && r.Algorithm == flow.AlgoLeakyBucket && (r.Limit != 5 || r.MaxWait.String() != "500ms") {
			t.Errorf("rate limiter: limit %v maxWait %v, want 5 500ms", r.Limit, r.MaxWait)
		}
	}
	if !strings.Contains(res.Reports[12].Note, "chain") {
		t.Errorf("chain report says %q, want it to name the chain strategy", res.Reports[12].Note)
	}
}

// TestImportWarmUpThrottling: sentinel-golang's WarmUp + Throttling is
// sentinel_warm_up with maxWait, exact; a queue of 0 becomes 1ns, approx.
func TestImportWarmUpThrottling(t *testing.T) {
	for _, tc := range []struct {
		queue   int
		verdict Verdict
		maxWait string
	}{{300, Exact, "300ms"}, {0, Approx, "1ns"}} {
		data := fmt.Sprintf(`[{"resource":"r","threshold":50,"tokenCalculateStrategy":1,"controlBehavior":1,"warmUpPeriodSec":5,"warmUpColdFactor":4,"maxQueueingTimeMs":%d}]`, tc.queue)
		res, err := Import([]File{{Name: "w.json", Data: []byte(data)}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		rs := res.Document.Rules()
		if rep := res.Reports[0]; rep.Verdict != tc.verdict || len(rs) != 1 {
			t.Fatalf("queue %d: %s, %d rules; want %s and one rule", tc.queue, rep, len(rs), tc.verdict)
		}
		if r := rs[0]; r.Algorithm != flow.AlgoSentinelWarmUp || r.MaxWait.String() != tc.maxWait || r.ColdFactor != 4 || r.Warmup.String() != "5s" {
			t.Errorf("queue %d: %v maxWait %v coldFactor %v warmup %v; want sentinel_warm_up %s 4 5s", tc.queue, r.Algorithm, r.MaxWait, r.ColdFactor, r.Warmup, tc.maxWait)
		}
	}
}

func TestImportForcedDialect(t *testing.T) {
	// {"resource","threshold"} reads as sentinel-golang; forced to Java it
	// is no rule Java knows.
	f := File{Name: "f.json", Data: []byte(`[{"resource":"r","threshold":5}]`)}
	res, err := Import([]File{f}, Options{})
	if err != nil || res.Reports[0].Kind != "go flow" {
		t.Fatalf("auto: got %v, %v; want a go flow rule", res, err)
	}
	if _, err := Import([]File{f}, Options{Dialect: Java}); err == nil || !strings.Contains(err.Error(), "f.json: [0]: cannot tell which Java Sentinel rule") {
		t.Errorf("forced java: got %v", err)
	}
}

func TestImportMalformed(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`{"resource":"r"}`, `bad.json: expected an array of rules, found an object (with "resource"; a single rule? put it in [ ])`},
		{`{"success":true,"data":{}}`, "bad.json: expected an array of rules, found an object whose data is not an array"},
		{`"x"`, `bad.json: expected an array of rules, found "x"`},
		{`[{"resource":`, "bad.json: not valid JSON"},
		{`[1]`, "bad.json: [0]: must be an object, got 1"},
		{`[{"resource":"r","count":"ten"}]`, `bad.json: [0].count: must be a number, got "ten"`},
		{`[{"resource":"r","grade":1.5,"count":1}]`, "bad.json: [0].grade: must be a whole number, got 1.5"},
		{`[{"resource":"r","threshold":1},{"resource":"r","controlBehavior":7,"threshold":1}]`, "bad.json: [1].controlBehavior: 7: out of range [0, 1]"},
		{`[{"rule":{"resource":"r","paramIdx":0,"count":1,"paramFlowItemList":[{"object":{},"count":1}]}}]`, "bad.json: [0].rule.paramFlowItemList[0].object: must be a string, number or boolean"},
		{`[{"foo":1}]`, "bad.json: [0]: cannot tell which Sentinel (Java or sentinel-golang) rule this is (fields: foo)"},
	} {
		_, err := Import([]File{{Name: "bad.json", Data: []byte(tc.data)}}, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.data, err, tc.want)
		}
		var fe *FieldError
		if err != nil && !errors.As(err, &fe) {
			t.Errorf("%s: %v is no *FieldError", tc.data, err)
		}
	}
}

// TestImportRefusedMapping: a rule flowgate refuses (a QPS of 0) is a
// cannot naming flowgate's objection, not an error.
func TestImportRefusedMapping(t *testing.T) {
	res, err := Import([]File{{Name: "z.json", Data: []byte(`[{"resource":"r","threshold":0}]`)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep := res.Reports[0]; rep.Verdict != Cannot || !strings.Contains(rep.Note, "limit") {
		t.Errorf("got %s, want a cannot naming limit", rep)
	}
	if n := len(res.Document.Rules()); n != 0 {
		t.Errorf("document has %d rules, want 0", n)
	}
}

// TestImportSystemRules: a CPU rule with BBR maps to the adaptive
// section's systemCPU (the lowest of several, as Sentinel checks them all);
// what has no counterpart is a cannot naming it.
func TestImportSystemRules(t *testing.T) {
	for _, tc := range []struct {
		data    string
		verdict []Verdict
		cpu     float64 // 0: no adaptive section
		note    string
	}{
		{`[{"metricType":4,"triggerCount":0.7,"strategy":1},{"metricType":4,"triggerCount":0.9,"strategy":1}]`, []Verdict{Approx, Approx}, 0.7, "percent"},
		{`[{"metricType":4,"triggerCount":80,"strategy":1}]`, []Verdict{Approx}, 0.8, "read as percent"},
		{`[{"metricType":4,"triggerCount":0.8,"strategy":-1}]`, []Verdict{Cannot}, 0, "not BBR"},
		{`[{"metricType":0,"triggerCount":4,"strategy":1}]`, []Verdict{Cannot}, 0, "load-average"},
		{`[{"highestSystemLoad":-1,"highestCpuUsage":0.85,"qps":500,"avgRt":-1,"maxThread":-1}]`, []Verdict{Approx}, 0.85, "dropped, no counterpart: qps 500"},
		{`[{"highestSystemLoad":8,"highestCpuUsage":-1,"qps":-1,"avgRt":-1,"maxThread":-1}]`, []Verdict{Cannot}, 0, "highestSystemLoad 8"},
	} {
		res, err := Import([]File{{Name: "s.json", Data: []byte(tc.data)}}, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.data, err)
		}
		for i, v := range tc.verdict {
			if rep := res.Reports[i]; rep.Verdict != v || !strings.Contains(rep.Note, tc.note) {
				t.Errorf("%s [%d]: %s, want %v naming %q", tc.data, i, rep, v, tc.note)
			}
		}
		var got float64
		if a := res.Document.Adaptive; a != nil {
			got = a.SystemGuard.CPU
		}
		if got != tc.cpu {
			t.Errorf("%s: systemCPU %v, want %v", tc.data, got, tc.cpu)
		}
	}
}
