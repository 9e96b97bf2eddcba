package modproxy

import (
	"archive/zip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriteLayout(t *testing.T) {
	src, out := t.TempDir(), t.TempDir()
	writeTree(t, src, map[string]string{
		"go.mod":            "module example.com/Core\n\ngo 1.26.0\n",
		"a.go":              "package core\n",
		"sub/b.go":          "package sub\n",
		"sub/testdata/x":    "data",
		"nested/go.mod":     "module example.com/Core/nested\n",
		"nested/n.go":       "package nested\n",
		".git/config":       "[core]\n",
		"sub/.hidden/h.txt": "h",
	})
	if err := Write(out, Module{Path: "example.com/Core", Version: "v0.1.0", Dir: src}); err != nil {
		t.Fatal(err)
	}
	vdir := filepath.Join(out, "example.com", "!core", "@v")
	list, err := os.ReadFile(filepath.Join(vdir, "list"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(list), "v0.1.0\n"; got != want {
		t.Errorf("list = %q, want %q", got, want)
	}
	info, err := os.ReadFile(filepath.Join(vdir, "v0.1.0.info"))
	if err != nil || !strings.Contains(string(info), `"Version":"v0.1.0"`) {
		t.Errorf("info = %q, %v", info, err)
	}
	zr, err := zip.OpenReader(filepath.Join(vdir, "v0.1.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	want := []string{"example.com/Core@v0.1.0/a.go", "example.com/Core@v0.1.0/go.mod", "example.com/Core@v0.1.0/sub/b.go", "example.com/Core@v0.1.0/sub/testdata/x"}
	if !slices.Equal(names, want) {
		t.Errorf("zip holds %q, want %q", names, want)
	}
}

func TestWriteRefusesWrongPath(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{"go.mod": "module example.com/a\n"})
	err := Write(t.TempDir(), Module{Path: "example.com/b", Version: "v1.0.0", Dir: src})
	if err == nil || !strings.Contains(err.Error(), `names module "example.com/a"`) {
		t.Errorf("Write = %v, want an error naming the go.mod's module", err)
	}
	if err := Write(t.TempDir(), Module{Path: "example.com/a", Version: "1.0", Dir: src}); err == nil {
		t.Error("Write accepted version \"1.0\"")
	}
}

func TestGoModReaders(t *testing.T) {
	gomod := []byte(`module example.com/x // the module

go 1.26.0

require example.com/one v1.2.3

require (
	example.com/two v0.1.0
	example.com/three v0.0.0-20260101000000-abcdefabcdef // indirect
)
`)
	if got := ModulePath(gomod); got != "example.com/x" {
		t.Errorf("ModulePath = %q", got)
	}
	for p, want := range map[string]string{"example.com/one": "v1.2.3", "example.com/two": "v0.1.0", "example.com/three": "v0.0.0-20260101000000-abcdefabcdef", "example.com/none": ""} {
		if got := Required(gomod, p); got != want {
			t.Errorf("Required(%s) = %q, want %q", p, got, want)
		}
	}
	if HasReplace(gomod) {
		t.Error("HasReplace found a replace in a go.mod without one")
	}
	if !HasReplace(append(gomod, "replace example.com/two => ../two\n"...)) {
		t.Error("HasReplace missed a replace")
	}
}
