package sentinel

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestImportYAMLMatchesJSON: every sentinel-golang example, written as
// YAML with the same field names, imports to the same document and
// reports as its JSON form.
func TestImportYAMLMatchesJSON(t *testing.T) {
	files := loadFiles(t, "testdata/golang/*.json")
	var yfiles []File
	for _, f := range files {
		yfiles = append(yfiles, File{Name: strings.TrimSuffix(f.Name, ".json") + ".yaml", Data: toYAML(t, f.Data)})
	}
	want, err := Import(files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Import(yfiles, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := got.Document.Rules(), want.Document.Rules(); !reflect.DeepEqual(g, w) {
		t.Errorf("YAML import:\n%+v\nwant (from JSON):\n%+v", g, w)
	}
	for i := range want.Reports {
		if g, w := got.Reports[i], want.Reports[i]; g.Verdict != w.Verdict || g.Note != w.Note {
			t.Errorf("report %d: %s, want %s", i, g, w)
		}
	}
}

// toYAML writes a JSON array of flat rule objects as a YAML sequence of
// mappings (JSON scalars are YAML scalars), one field a line.
func toYAML(t *testing.T, data []byte) []byte {
	t.Helper()
	errs := &problems{}
	var elems []*element
	readFile(File{Name: "x.json", Data: data}, errs, func(e *element) { elems = append(elems, e) })
	var b strings.Builder
	b.WriteString("# written by toYAML\n")
	for _, e := range elems {
		first := true
		for _, k := range e.keys() {
			b.WriteString(map[bool]string{true: "- ", false: "  "}[first])
			first = false
			b.WriteString(k + ": " + string(e.raw[k]) + "\n")
		}
	}
	if err := errs.err(); err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}

func TestImportYAMLForms(t *testing.T) {
	// Numeric keys in specificItems, a comment, a .yml file.
	y := `
# hotspot, as a YAML file
- resource: r
  metricType: 1
  paramKey: tenant
  threshold: 10
  specificItems: {7: 30, vip: 50}
`
	res, err := Import([]File{{Name: "hot.yml", Data: []byte(y)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs := res.Document.Rules()
	if len(rs) != 1 || rs[0].Items["7"] != 30 || rs[0].Items["vip"] != 50 || rs[0].Param != "tenant" {
		t.Fatalf("got %+v, want one param rule on tenant with items 7=30, vip=50", rs)
	}
	// A YAML file without an extension is told by its first byte.
	if res, err := Import([]File{{Name: "rules", Data: []byte("- resource: r\n  threshold: 5\n")}}, Options{}); err != nil || len(res.Document.Rules()) != 1 {
		t.Errorf("extensionless YAML: %v, %v", res, err)
	}
}

func TestImportYAMLMalformed(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"- resource: r\n  threshold: [1\n", "bad.yaml: not a YAML array of rules: yaml: line"},
		{"resource: r\nthreshold: 5\n", "bad.yaml: not a YAML array of rules: the document is a mapping, not a sequence"},
		{"- resource: r\n  threshold: ten\n", `bad.yaml: [0].threshold: must be a number, got "ten"`},
		{"- 1\n", "bad.yaml: [0]: must be an object, got 1"},
	} {
		_, err := Import([]File{{Name: "bad.yaml", Data: []byte(tc.data)}}, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.data, err, tc.want)
		}
		var fe *FieldError
		if err != nil && !errors.As(err, &fe) {
			t.Errorf("%q: %v is no *FieldError", tc.data, err)
		}
	}
}
