package sentinel

import (
	"os"
	"path/filepath"
	"testing"
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

func TestDump(t *testing.T) {
	for _, g := range []string{"testdata/golang/*.json", "testdata/java/*.json"} {
		for _, f := range loadFiles(t, g) {
			res, err := Import([]File{f}, Options{})
			if err != nil {
				t.Logf("%s: %v", f.Name, err)
				continue
			}
			for _, r := range res.Reports {
				t.Log(r)
			}
			t.Logf("%s", res.Document.Format())
		}
	}
}
