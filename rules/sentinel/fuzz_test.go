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
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Import([]File{{Name: "f", Data: data}}, Options{})
		if err != nil {
			return
		}
		out := res.Document.Format()
		if _, err := rules.Parse(out); err != nil {
			t.Fatalf("imported document does not parse: %v\n%s", err, out)
		}
		// An engine may refuse a rule (an error), never panic on one.
		_ = flow.NewEngine().LoadRules(res.Document.Rules())
	})
}
