package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/rules"
)

// runCLI runs the command in-process and returns its exit code and output.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const good = `{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 5}]}`

func TestValidateReportsEveryProblemOfEveryFile(t *testing.T) {
	dir := t.TempDir()
	ok := writeFile(t, dir, "ok.json", good)
	bad := writeFile(t, dir, "bad.json", `{"rules": [
		{"id": "orders", "resource": "r", "algorithm": "token_bucket", "limit": 0, "window": "10x"},
		{"id": "orders", "resource": "s", "algorithm": "gcra", "limit": 1}]}`)
	broken := writeFile(t, dir, "broken.json", "{\"rules\": [\n")
	missing := filepath.Join(dir, "missing.json")

	code, out, errOut := runCLI(t, "", "validate", ok, bad, broken, missing)
	if code != exitUsage {
		t.Errorf("exit code = %d, want %d (a file could not be read)", code, exitUsage)
	}
	for _, want := range []string{
		ok + ": ok (1 rules, version ",
		bad + `: rules[0] (id "orders"): window: "10x": unknown unit "x"`,
		bad + `: rules[0] (id "orders"): limit: must be > 0`,
		bad + `: rules[1] (id "orders"): algorithm: unknown "gcra" (valid: token_bucket, warm_up,`,
		bad + `: rules[1] (id "orders"): id: duplicate of rules[0]`,
		broken + ": line 1, column 12: unexpected end of input",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 6 {
		t.Errorf("stdout has %d lines, want 6:\n%s", n, out)
	}
	if !strings.Contains(errOut, missing+": ") {
		t.Errorf("stderr lacks the unreadable file: %q", errOut)
	}
}

func TestValidateExitCodes(t *testing.T) {
	dir := t.TempDir()
	ok := writeFile(t, dir, "ok.json", good)
	bad := writeFile(t, dir, "bad.json", `{"rules": [{}]}`)
	if code, _, _ := runCLI(t, "", "validate", ok); code != exitOK {
		t.Errorf("valid file: exit %d, want 0", code)
	}
	if code, out, _ := runCLI(t, "", "validate", "-q", ok); code != exitOK || out != "" {
		t.Errorf("-q valid file: exit %d, output %q; want 0 and nothing", code, out)
	}
	if code, _, _ := runCLI(t, "", "validate", ok, bad); code != exitInvalid {
		t.Errorf("one bad file: exit %d, want 1", code)
	}
	if code, out, _ := runCLI(t, good, "validate", "-"); code != exitOK || !strings.HasPrefix(out, "-: ok") {
		t.Errorf("stdin: exit %d, output %q", code, out)
	}
	if code, _, _ := runCLI(t, "", "validate"); code != exitUsage {
		t.Errorf("no files: exit %d, want 2", code)
	}
	if code, _, errOut := runCLI(t, "", "nope"); code != exitUsage || !strings.Contains(errOut, "unknown command") {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := runCLI(t, ""); code != exitUsage {
		t.Errorf("no command: exit %d, want 2", code)
	}
}

func TestValidateExamples(t *testing.T) {
	files, _ := filepath.Glob("../../examples/rules/*.json")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	code, out, errOut := runCLI(t, "", append([]string{"validate"}, files...)...)
	if code != exitOK || strings.Count(out, ": ok (") != len(files) {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

func TestFmtPrintsNormalised(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in.json", `{"rules": [{"limit": 20, "algorithm": "warm_up", "resource": "r",
		"warmup": "60s", "level": "user", "id": "w"}], "adaptive": {}}`)
	code, out, errOut := runCLI(t, "", "fmt", in)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `{
  "rules": [
    {
      "id": "w",
      "resource": "r",
      "level": "user",
      "algorithm": "warm_up",
      "limit": 20,
      "window": "1s",
      "warmup": "1m",
      "coldFactor": 3,
      "maxWait": "0s",
      "maxKeys": 100000,
      "idleTTL": "10m",
      "adaptive": false
    }
  ],
  "adaptive": {
    "cpuTarget": 0.8,
    "bandLow": 0.7,
    "bandHigh": 0.88,
    "minFactor": 0.1,
    "period": "250ms",
    "cpuSource": "auto"
  }
}
`
	if out != want {
		t.Errorf("fmt printed:\n%s\nwant:\n%s", out, want)
	}
	// The output is a fixed point: it parses, and formats to itself.
	doc, err := rules.Parse([]byte(out))
	if err != nil || string(doc.Format()) != out {
		t.Errorf("fmt output is not stable: %v", err)
	}
}

func TestFmtWrite(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "r.json", good)
	if code, out, errOut := runCLI(t, "", "fmt", "-w", p); code != exitOK || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	got, _ := os.ReadFile(p)
	doc, err := rules.Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(doc.Format()) {
		t.Errorf("file after fmt -w:\n%s\nwant:\n%s", got, doc.Format())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("fmt -w left %d files in the directory, want 1", len(entries))
	}
}

func TestFmtRefusesBadDocument(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "r.json", `{"rules": [{"resource": "r", "algorithm": "token_bucket", "limit": 1, "widnow": "1s"}]}`)
	code, out, errOut := runCLI(t, "", "fmt", "-w", p)
	if code != exitInvalid || out != "" {
		t.Errorf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	if want := p + `: rules[0]: widnow: unknown field (did you mean "window"?)`; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q lacks %q", errOut, want)
	}
	if got, _ := os.ReadFile(p); !strings.Contains(string(got), "widnow") {
		t.Error("a bad document was rewritten")
	}
	if code, _, _ := runCLI(t, "", "fmt"); code != exitUsage {
		t.Errorf("fmt without a file: exit %d, want 2", code)
	}
}

func TestValidateAndFmtBreakers(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.json", `{"rules": [
		{"id": "cb", "resource": "r", "algorithm": "circuit_breaker", "strategy": "slow_ratio", "threshold": 0.5,
		 "openFor": "5s", "limit": 10, "cluster": {}},
		{"id": "tb", "resource": "r", "algorithm": "token_bucket", "limit": 5, "openFor": "5s"}]}`)
	code, out, _ := runCLI(t, "", "validate", bad)
	if code != exitInvalid {
		t.Errorf("exit code = %d, want %d", code, exitInvalid)
	}
	for _, want := range []string{
		bad + `: rules[0] (id "cb"): limit: not for circuit_breaker rules`,
		bad + `: rules[0] (id "cb"): cluster: not for circuit_breaker rules`,
		bad + `: rules[0] (id "cb"): slowCall: required for slow_ratio`,
		bad + `: rules[1] (id "tb"): openFor: only for circuit_breaker rules`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, `{"rules": [{"id": "cb", "resource": "r", "algorithm": "circuit_breaker",
		"strategy": "error_count", "threshold": 3, "openFor": "1m0s"}]}`, "fmt", "-")
	if code != 0 || !strings.Contains(out, `"openFor": "1m",`) || !strings.Contains(out, `"minRequests": 5,`) ||
		strings.Contains(out, `"limit"`) || strings.Contains(out, `"maxWait"`) {
		t.Errorf("fmt of a breaker (exit %d):\n%s", code, out)
	}
}

func TestValidateSaysWhatIsInShadow(t *testing.T) {
	code, out, errOut := runCLI(t, "", "validate", "../../examples/rules/shadow.json", "../../examples/rules/minimal.json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "ok (3 rules, 3 in shadow, version ") ||
		strings.Contains(lines[1], "shadow") {
		t.Errorf("output:\n%s", out)
	}
}
