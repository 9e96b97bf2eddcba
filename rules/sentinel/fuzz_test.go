package sentinel

import (
	"os"
	"path/filepath"
	"testing"

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
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Import([]File{{Name: "f", Data: data}}, Options{})
		if err != nil {
			return
		}
		out := res.Document.Format()
		if _, err := rules.Parse(out); err != nil {
			t.Fatalf("imported document does not parse: %v\n%s", err, out)
		}
	})
}
