package sentinel

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/rules"
)

// importOne imports one file and returns the problems, one a line.
func importOne(name, data string) (*Result, string) {
	res, err := Import([]File{{Name: name, Data: []byte(data)}}, Options{})
	if err != nil {
		var lines []string
		for _, p := range rules.Problems(err) {
			lines = append(lines, p.Error())
		}
		return nil, strings.Join(lines, "\n")
	}
	return res, ""
}

// TestImportRefusesWhatJSONWouldChange: invalid UTF-8, a lone surrogate
// and a key given twice are refused with the field's path, where
// encoding/json would have read U+FFFD or the last value and the report
// said "exact".
func TestImportRefusesWhatJSONWouldChange(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"f.json", "[{\"resource\": \"GET /a\xff\", \"threshold\": 10}]", "f.json: [0].resource: not valid UTF-8"},
		{"f.json", `[{"resource": "a", "threshold": 1}, {"resource": "b\ud800", "threshold": 10}]`, "f.json: [1].resource: not valid UTF-8"},
		{"f.json", `[{"resource": "a", "threshold": 10, "resource": "b"}]`, "f.json: [0].resource: given more than once"},
		{"d.json", `[{"app": "x", "rule": {"resource": "a", "paramIdx": 0, "count": 5, "count": 50}}]`, "d.json: [0].rule.count: given more than once"},
		{"k.json", "[{\"resource\": \"a\", \"threshold\": 10, \"x\xfe\": 1}]", `k.json: [0]."x\ufffd": key not valid UTF-8`},
		{"f.yaml", "- resource: a\n  threshold: 10\n  resource: b\n", "f.yaml: [0].resource: given more than once"},
		{"f.yaml", "- resource: 123\n  threshold: 10\n", "f.yaml: [0].resource: must be a string, got 123"},
		{"f.yaml", "- resource: a\n  threshold: .inf\n", "f.yaml: [0].threshold: \".inf\": not a finite number"},
	} {
		res, problems := importOne(tc.name, tc.data)
		if res != nil || !strings.Contains(problems, tc.want) {
			t.Errorf("%s %q: problems\n%s\nwant %q", tc.name, tc.data, problems, tc.want)
		}
	}
}

// TestImportKeepsStringsAsWritten: a plain YAML scalar that YAML would
// read as a timestamp stays the text written; asked-for U+FFFD stays;
// merge keys still merge; both report "exact" because nothing changed.
func TestImportKeepsStringsAsWritten(t *testing.T) {
	for _, tc := range []struct{ name, data, resource string }{
		{"t.yaml", "- resource: 2024-01-01\n  threshold: 10\n", "2024-01-01"},
		{"t.yaml", "- resource: 2024-01-01T10:00:00Z\n  threshold: 10\n", "2024-01-01T10:00:00Z"},
		{"t.yaml", "- resource: \"0x10\"\n  threshold: 0x10\n", "0x10"},
		{"t.yaml", "- &base\n  resource: base\n  threshold: 10\n- <<: *base\n  resource: derived\n", "derived"},
		{"u.json", `[{"resource": "a\ufffd", "threshold": 10}]`, "a\uFFFD"},
	} {
		res, problems := importOne(tc.name, tc.data)
		if res == nil {
			t.Errorf("%q: refused:\n%s", tc.data, problems)
			continue
		}
		last := res.Reports[len(res.Reports)-1]
		rs := res.Document.Rules()
		if last.Resource != tc.resource || rs[len(rs)-1].Resource != tc.resource || last.Verdict != Exact {
			t.Errorf("%q: report %s, rule resource %q; want %q, exact", tc.data, last, rs[len(rs)-1].Resource, tc.resource)
		}
	}
	res, _ := importOne("t.yaml", "- resource: r\n  threshold: 0x10\n")
	if res == nil || res.Document.Rules()[0].Limit != 16 {
		t.Errorf("threshold 0x10: %+v, want a limit of 16", res)
	}
}

// TestImportBounded: a file over rules.MaxDocumentBytes is refused unread;
// a megabyte of bad JSON elements, or a quarter of one in YAML, is refused
// with rules.MaxProblems problems and a last one saying there are more,
// allocating less than 150 times the input (encoding/json's and the YAML
// library's trees of the whole file are the large part; 45-100 times
// measured); an alias bomb is refused.
func TestImportBounded(t *testing.T) {
	_, problems := importOne("big.json", "["+strings.Repeat(" ", rules.MaxDocumentBytes)+"]")
	if !strings.Contains(problems, strconv.Itoa(rules.MaxDocumentBytes)) {
		t.Errorf("oversized file: %q, want the bound %d", problems, rules.MaxDocumentBytes)
	}
	for _, f := range []File{
		{Name: "many.json", Data: []byte("[{}" + strings.Repeat(",{}", (1<<20)/3) + "]")},
		{Name: "many.json", Data: []byte("[1" + strings.Repeat(",1", (1<<20)/2) + "]")},
		{Name: "many.yaml", Data: bytes.Repeat([]byte("- {a: 1}\n"), (1<<18)/9)},
	} {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		_, err := Import([]File{f}, Options{})
		took := time.Since(start)
		runtime.ReadMemStats(&m1)
		ps := rules.Problems(err)
		if len(ps) != rules.MaxProblems+1 || !strings.Contains(ps[rules.MaxProblems].Error(), "more than") {
			t.Errorf("%s: %d problems, want %d and a last one saying there are more", f.Name, len(ps), rules.MaxProblems)
		}
		if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 150*uint64(len(f.Data)) {
			t.Errorf("%s: %d bytes allocated for %d bytes", f.Name, alloc, len(f.Data))
		}
		t.Logf("%s: %d bytes refused in %v, %d bytes allocated", f.Name, len(f.Data), took, m1.TotalAlloc-m0.TotalAlloc)
	}
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'k'; i++ {
		p := string(i - 1)
		bomb += string(i) + ": &" + string(i) + " [*" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + ", *" + p + "]\n"
	}
	bomb = "- resource: r\n  threshold: 1\n  x:\n" + indent(bomb)
	if _, problems := importOne("bomb.yaml", bomb); problems == "" {
		t.Error("an alias bomb was imported")
	}
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
}
