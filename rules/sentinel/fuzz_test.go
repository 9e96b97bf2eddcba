package sentinel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// FuzzImport: no input panics, and whatever imports is a document that
// parses back in fmt form.
func FuzzImport(f *testing.F) {
	names, _ := filepath.Glob("testdata/*/*.json")
	for _, n := range names {
		if data, err := os.ReadFile(n); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`[{"resource":"r","threshold":1e308,"statIntervalInMs":4294967295}]`))
	f.Add([]byte(`[{"rule":{"rule":{}}}]`))
	f.Add([]byte("- resource: r\n  metricType: 1\n  paramKey: k\n  threshold: 3\n  burstCount: 2\n  specificItems: {1: 9}\n"))
	f.Add([]byte("- resource: r\n  threshold: 100\n  tokenCalculateStrategy: 1\n  controlBehavior: 1\n  warmUpPeriodSec: 1\n  maxQueueingTimeMs: 0\n"))
	f.Add([]byte(`[{"metricType":4,"triggerCount":85,"strategy":1}]`))
	f.Add([]byte(`[{"resource":"GET:/r","count":5,"interval":3,"intervalUnit":2,"burst":2,"paramItem":{"parseStrategy":2,"fieldName":"h"}}]`))
	f.Add([]byte(`{"success":true,"data":[{"apiName":"a","predicateItems":[{"pattern":"/x"}]}]}`))
	f.Add([]byte(`[{"resource":"r","paramIdx":0,"count":3,"clusterMode":true,"clusterConfig":{"thresholdType":1,"x":1}}]`))
	f.Add([]byte("[{\"resource\": \"a\", \"threshold\": 1, \"resource\": \"\xff\"}]"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzOne(t, "f", data) })
}

// FuzzImportYAML is FuzzImport with every input read as YAML.
func FuzzImportYAML(f *testing.F) {
	f.Add([]byte("- resource: 2024-01-01\n  threshold: 10\n"))
	f.Add([]byte("- &b {resource: r, threshold: 0x10}\n- <<: *b\n  resource: s\n"))
	f.Add([]byte("- resource: a\n  resource: b\n"))
	f.Add([]byte("- resource: r\n  metricType: 1\n  paramKey: k\n  threshold: 3\n  specificItems: {1: 9, ~: 2}\n"))
	f.Add([]byte("a: &a [x, x]\nb: [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzOne(t, "f.yaml", data) })
}

// fuzzOne: no input panics; a refusal lists problems that each say
// what is wrong; whatever imports is a document that parses back in fmt
// form and that an engine takes without panicking.
func fuzzOne(t *testing.T, name string, data []byte) {
	res, err := Import([]File{{Name: name, Data: data}}, Options{})
	if err != nil {
		ps := rules.Problems(err)
		if len(ps) > rules.MaxProblems+1 {
			t.Fatalf("%d problems listed, more than rules.MaxProblems", len(ps))
		}
		for _, p := range ps {
			if fe, ok := p.(*FieldError); ok && fe.Msg == "" {
				t.Fatalf("problem without a message: %q", p)
			}
		}
		return
	}
	out := res.Document.Format()
	if _, err := rules.Parse(out); err != nil {
		t.Fatalf("imported document does not parse: %v\n%s", err, out)
	}
	// An engine may refuse a rule (an error), never panic on one.
	_ = flow.NewEngine().LoadRules(res.Document.Rules())
}
