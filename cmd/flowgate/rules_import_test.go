package main

import (
	"strings"
	"testing"

	"github.com/flowgate/flowgate/rules"
)

func TestRulesImport(t *testing.T) {
	dir := t.TempDir()
	flowFile := writeFile(t, dir, "flow.json", `[{"id":1,"app":"a","resource":"GET /x","limitApp":"default","grade":1,"count":5,"controlBehavior":2,"maxQueueingTimeMs":100}]`)
	chain := writeFile(t, dir, "chain.json", `[{"resource":"GET /y","grade":1,"count":5,"strategy":2,"refResource":"in"}]`)
	iso := writeFile(t, dir, "iso.json", `[{"resource":"abc","metricType":0,"threshold":12}]`)

	code, out, errs := runCLI(t, "", "rules", "import", "--from", "sentinel", flowFile, iso)
	if code != exitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errs)
	}
	doc, err := rules.Parse([]byte(out))
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, out)
	}
	if string(doc.Format()) != out {
		t.Errorf("output is not in fmt form:\n%s", out)
	}
	if n := len(doc.Rules()); n != 2 {
		t.Errorf("got %d rules, want 2", n)
	}
	for _, w := range []string{flowFile + `[0] java flow "GET /x": exact`, iso + `[0] go isolation "abc": exact`} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}

	// A cannot without --partial: exit 1, nothing on stdout.
	code, out, errs = runCLI(t, "", "rules", "import", "--from", "sentinel", flowFile, chain)
	if code != exitInvalid || out != "" || !strings.Contains(errs, `chain.json[0] java flow "GET /y": cannot`) {
		t.Errorf("cannot: exit %d stdout %q stderr %q; want 1, nothing, a cannot line", code, out, errs)
	}
	// With --partial the rest is written.
	code, out, _ = runCLI(t, "", "rules", "import", "--from", "sentinel", "--partial", flowFile, chain)
	if doc, err := rules.Parse([]byte(out)); code != exitOK || err != nil || len(doc.Rules()) != 1 {
		t.Errorf("--partial: exit %d, parse error %v, output:\n%s", code, err, out)
	}
	// The output passes validate.
	res := writeFile(t, dir, "out.json", out)
	if code, _, errs := runCLI(t, "", "validate", res); code != exitOK {
		t.Errorf("validate: exit %d: %s", code, errs)
	}

	// Malformed input names file, index and field.
	bad := writeFile(t, dir, "bad.json", `[{"resource":"r","count":"x"}]`)
	code, out, errs = runCLI(t, "", "rules", "import", "--from", "sentinel", bad)
	if code != exitInvalid || out != "" || !strings.Contains(errs, bad+`: [0].count: must be a number`) {
		t.Errorf("malformed: exit %d stdout %q stderr %q", code, out, errs)
	}
	// Usage errors.
	for _, args := range [][]string{
		{"rules", "import", flowFile},
		{"rules", "import", "--from", "sentinel"},
		{"rules", "import", "--from", "sentinel", "--param-names", "zero=x", flowFile},
		{"rules", "import", "--from", "sentinel", "--dialect", "rust", flowFile},
	} {
		if code, _, _ := runCLI(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestRulesImportEmpty: nothing to write is exit 1 unless --allow-empty,
// since an empty document, loaded, removes every limit.
func TestRulesImportEmpty(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty.json", `[]`)
	chain := writeFile(t, dir, "chain.json", `[{"resource":"GET /y","grade":1,"count":5,"strategy":2,"refResource":"in"}]`)
	obj := writeFile(t, dir, "obj.json", `{"resource":"GET /y","grade":1,"count":5}`)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{empty}, exitInvalid, "empty.json: no rules"},
		{[]string{"--allow-empty", empty}, exitOK, ""},
		{[]string{"--partial", chain}, exitInvalid, "no rule can be carried over"},
		{[]string{"--partial", "--allow-empty", chain}, exitOK, ""},
		{[]string{obj}, exitInvalid, "obj.json: expected an array of rules, found an object"},
	} {
		code, out, errs := runCLI(t, "", append([]string{"rules", "import", "--from", "sentinel"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errs, tc.code, tc.msg)
		}
		if code == exitOK {
			if doc, err := rules.Parse([]byte(out)); err != nil || len(doc.Rules()) != 0 {
				t.Errorf("%v: output %q (%v), want an empty document", tc.args, out, err)
			}
		} else if out != "" {
			t.Errorf("%v: wrote %q on failure", tc.args, out)
		}
	}
}

// TestRulesImportRenameHTTP: --rename-http writes flowhttp's route names;
// without it the report warns.
func TestRulesImportRenameHTTP(t *testing.T) {
	f := writeFile(t, t.TempDir(), "web.json", `[{"resource":"GET:/api/orders","grade":1,"count":5}]`)
	code, out, errs := runCLI(t, "", "rules", "import", "--from", "sentinel", "--rename-http", f)
	doc, err := rules.Parse([]byte(out))
	if code != exitOK || err != nil || doc.Rules()[0].Resource != "GET /api/orders" || !strings.Contains(errs, `as "GET /api/orders": exact`) {
		t.Errorf("--rename-http: exit %d, %v, stderr %q, output:\n%s", code, err, errs, out)
	}
	code, _, errs = runCLI(t, "", "rules", "import", "--from", "sentinel", f)
	if code != exitOK || !strings.Contains(errs, "warning: \"GET:/api/orders\" looks like a Sentinel web resource") {
		t.Errorf("without it: exit %d, stderr %q", code, errs)
	}
}

func TestParseParamNames(t *testing.T) {
	got, err := parseParamNames("0=tenant, 1=region")
	if err != nil || got[0] != "tenant" || got[1] != "region" || len(got) != 2 {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := parseParamNames("0=a,0=b"); err == nil {
		t.Error("an index named twice must be an error")
	}
}
