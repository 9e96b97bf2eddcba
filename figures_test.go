package flowgate_test

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docs/figures.md lists every figure README.md, docs/*.md and
// bench/README.md state, with the command that produces it, the test that
// asserts it and the tolerance. TestFiguresList keeps the list honest, each
// complaint naming its line of docs/figures.md:
//
//   - the page exists and states the figure as quoted («…», compared with
//     runs of white space folded);
//   - every `make X` in "produced by" is a Makefile target, every
//     `go test … -run R … ./pkg/` (or -bench R) names a package with a test
//     (or benchmark) that R selects, every `go run ./dir` and `sh file`
//     names something that exists;
//   - every file_test.go:TestName in "asserted by" exists; a figure no test
//     asserts says "not asserted" and why;
//   - the tolerance is stated.
const figuresPage = "docs/figures.md"

type figureRow struct {
	line                                   int
	page, quote, produced, asserted, bound string
}

func readFigures(t *testing.T) []figureRow {
	t.Helper()
	f, err := os.Open(figuresPage)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []figureRow
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| page |") {
			continue
		}
		cells := splitRow(line)
		if len(cells) != 5 {
			t.Errorf("%s:%d: %d cells, want 5 (page | figure | produced by | asserted by | tolerance)", figuresPage, n, len(cells))
			continue
		}
		rows = append(rows, figureRow{n, strings.Trim(cells[0], "`"), cells[1], cells[2], cells[3], cells[4]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// splitRow splits a Markdown table row on the pipes outside backticks; \|
// is a pipe inside a cell (in a code span too, as GitHub reads tables).
func splitRow(line string) []string {
	var cells []string
	var cur strings.Builder
	code, escaped := false, false
	for _, r := range strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|") {
		switch {
		case escaped && r == '|':
			s := cur.String()
			cur.Reset()
			cur.WriteString(s[:len(s)-1]) // drop the backslash
		case r == '`':
			code = !code
		case r == '|' && !code:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			escaped = false
			continue
		}
		escaped = r == '\\'
		cur.WriteRune(r)
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var (
	spaces     = regexp.MustCompile(`\s+`)
	quoted     = regexp.MustCompile(`«([^»]+)»`)
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	testRef    = regexp.MustCompile(`([\w./-]+_test\.go):((?:Test|Benchmark)\w+)`)
	selectFlag = regexp.MustCompile(`-(run|bench) (?:'([^']*)'|"([^"]*)"|(\S+))`)
)

func TestFiguresList(t *testing.T) {
	rows := readFigures(t)
	if len(rows) < 40 {
		t.Fatalf("%s lists %d figures; the list is the point of the page", figuresPage, len(rows))
	}
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, r := range rows {
		at := fmt.Sprintf("%s:%d", figuresPage, r.line)
		text, ok := pages[r.page]
		if !ok {
			b, err := os.ReadFile(r.page)
			if err != nil {
				t.Errorf("%s: page: %v", at, err)
				continue
			}
			text = spaces.ReplaceAllString(string(b), " ")
			pages[r.page] = text
		}
		qs := quoted.FindAllStringSubmatch(r.quote, -1)
		if len(qs) == 0 {
			t.Errorf("%s: the figure cell quotes nothing in «…»", at)
		}
		for _, q := range qs {
			if !strings.Contains(text, spaces.ReplaceAllString(q[1], " ")) {
				t.Errorf("%s: %s does not state «%s»", at, r.page, q[1])
			}
		}
		checkProducer(t, at, r.produced, string(makefile))
		checkAsserter(t, at, r.asserted)
		if r.bound == "" {
			t.Errorf("%s: no tolerance stated", at)
		}
	}
}

func checkProducer(t *testing.T, at, cell, makefile string) {
	t.Helper()
	found := 0
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		cmd := m[1]
		switch {
		case strings.HasPrefix(cmd, "make "):
			found++
			target := strings.Fields(cmd)[1]
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).MatchString(makefile) {
				t.Errorf("%s: `%s`: no target %q in the Makefile", at, cmd, target)
			}
		case strings.Contains(cmd, "go test "):
			found++
			checkGoTest(t, at, cmd)
		case strings.Contains(cmd, "go run "):
			found++
			dir := strings.Fields(cmd[strings.Index(cmd, "go run ")+len("go run "):])[0]
			if _, err := os.Stat(dir); err != nil {
				t.Errorf("%s: `%s`: %v", at, cmd, err)
			}
		case strings.HasPrefix(cmd, "sh "):
			found++
			if _, err := os.Stat(strings.Fields(cmd)[1]); err != nil {
				t.Errorf("%s: `%s`: %v", at, cmd, err)
			}
		}
	}
	if found == 0 && !strings.HasPrefix(cell, "record:") {
		t.Errorf("%s: produced by %q: no make target, go test, go run or sh command (or \"record:\" and why)", at, cell)
	}
}

// checkGoTest: the packages exist and the -run (or -bench) pattern selects
// a test (or benchmark) in one of them.
func checkGoTest(t *testing.T, at, cmd string) {
	t.Helper()
	base := "."
	if rest, ok := strings.CutPrefix(cmd, "cd "); ok {
		base = strings.Fields(rest)[0]
	}
	kind, pattern := "Test", ""
	for _, f := range selectFlag.FindAllStringSubmatch(cmd, -1) {
		p := f[2] + f[3] + f[4]
		if f[1] == "bench" {
			kind, pattern = "Benchmark", p
		} else if pattern == "" || p != "^$" {
			pattern = p
		}
	}
	re, err := regexp.Compile(pattern)
	if err != nil || pattern == "" {
		t.Errorf("%s: `%s`: pattern %q: %v", at, cmd, pattern, err)
		return
	}
	var pkgs []string
	for _, f := range strings.Fields(cmd) {
		if strings.HasPrefix(f, "./") {
			pkgs = append(pkgs, filepath.Join(base, f))
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{base}
	}
	funcs := regexp.MustCompile(`(?m)^func (` + kind + `\w+)\(`)
	for _, dir := range pkgs {
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if len(files) == 0 {
			t.Errorf("%s: `%s`: no test files in %s", at, cmd, dir)
		}
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range funcs.FindAllStringSubmatch(string(b), -1) {
				if re.MatchString(m[1]) {
					return
				}
			}
		}
	}
	t.Errorf("%s: `%s`: -run/-bench %q selects no %s function in %v", at, cmd, pattern, kind, pkgs)
}

func checkAsserter(t *testing.T, at, cell string) {
	t.Helper()
	refs := testRef.FindAllStringSubmatch(cell, -1)
	if len(refs) == 0 && !strings.HasPrefix(cell, "not asserted") {
		t.Errorf("%s: asserted by %q: no file_test.go:TestName (or \"not asserted\" and why)", at, cell)
	}
	for _, ref := range refs {
		b, err := os.ReadFile(ref[1])
		if err != nil {
			t.Errorf("%s: %s: %v", at, ref[0], err)
			continue
		}
		if !strings.Contains(string(b), "\nfunc "+ref[2]+"(") {
			t.Errorf("%s: %s: no func %s in %s", at, ref[0], ref[2], ref[1])
		}
	}
}

// TestQuickstartOutput: README's quick start prints six "passed" lines and
// then call 7 blocked, retry in ~200ms (a 5/s bucket: the 7th call owes a
// fifth of a second; the calls before it take microseconds, so the retry
// rounds to 190ms at the least on a machine stalled for up to 5ms).
func TestQuickstartOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs examples/quickstart")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("no go command to run the example with")
	}
	out, err := exec.Command(goBin, "run", "./examples/quickstart").CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/quickstart: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines, want 7:\n%s", len(lines), out)
	}
	for i, l := range lines[:6] {
		if want := fmt.Sprintf("call %d: passed", i+1); l != want {
			t.Errorf("line %d: %q, want %q", i+1, l, want)
		}
	}
	const prefix = `call 7: blocked by rule "search" at level global, retry in ~`
	retry, ok := strings.CutPrefix(lines[6], prefix)
	d, err := time.ParseDuration(retry)
	if !ok || err != nil || d < 190*time.Millisecond || d > 200*time.Millisecond {
		t.Errorf("line 7: %q, want %q followed by 190ms..200ms", lines[6], prefix)
	}
}

// TestComputedFigures: figures the docs derive rather than measure.
func TestComputedFigures(t *testing.T) {
	// docs/rules.md: 2^31−1 tokens of a 5/s rule would close it for 13.6 years.
	years := float64(math.MaxInt32) / 5 / (365.25 * 24 * 3600)
	if got := math.Round(years*10) / 10; got != 13.6 {
		t.Errorf("2^31-1 tokens at 5/s: %.2f years, docs/rules.md says 13.6", years)
	}
}
