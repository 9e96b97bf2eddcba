package flowgate_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/flowgate/flowgate/rules"
)

// The guide is README.md and the pages under docs/. Three tests keep it
// honest, each naming the file and line of what it rejects:
//
// TestDocsLinks: every relative link in the guide and in bench/README.md names
// a file inside the repository, every #anchor names a heading of its target
// (GitHub's anchors), and README.md links every page under docs/.
//
// TestDocsRuleBlocks: every ```json block is parsed by rules.Parse. A block
// holding one rule object (it has "id" or "algorithm") is parsed as
// {"rules": [block]}; a JSON block that is not rules at all must be marked
// ```json fragment, and is then left alone.
//
// TestDocsGoBlocks: every ```go block is type-checked against the module,
// with the export data of one `go list -export -deps` (so it is skipped with
// -short). A block is one of three kinds, told from its text:
//
//   - a complete file starts with a package clause, and is checked as is;
//   - declarations parse as a file's body (funcs, types, vars), and are checked
//     as a file that imports the packages of docImports by those names;
//   - statements are anything else, checked as the body of a function that
//     returns error, whose parameters (docParams) are the values snippets
//     assume: eng, ctx, logger, mux and the like. A snippet may redeclare them.
//
// In declarations and statements an unused import or variable is forgiven (a
// snippet shows a call, not a program); nothing else is. A block whose first
// line is `// go get github.com/flowgate/flowgate/contrib/NAME` is checked in
// that module, contrib/NAME, with its framework imported (docModuleImports).
// Errors carry //line positions, so a type error names the line inside the
// Markdown file.

// docImports are the packages a snippet may use without importing, by the
// name it uses.
var docImports = map[string]string{
	"context":    "context",
	"errors":     "errors",
	"fmt":        "fmt",
	"log":        "log",
	"slog":       "log/slog",
	"http":       "net/http",
	"netip":      "net/netip",
	"os":         "os",
	"time":       "time",
	"tls":        "crypto/tls",
	"flow":       "github.com/flowgate/flowgate/flow",
	"flowhttp":   "github.com/flowgate/flowgate/flow/flowhttp",
	"flowgrpc":   "github.com/flowgate/flowgate/flow/flowgrpc",
	"rules":      "github.com/flowgate/flowgate/rules",
	"etcdsource": "github.com/flowgate/flowgate/rules/etcdsource",
	"sentinel":   "github.com/flowgate/flowgate/rules/sentinel",
	"adaptive":   "github.com/flowgate/flowgate/adaptive",
	"alerting":   "github.com/flowgate/flowgate/alerting",
	"admin":      "github.com/flowgate/flowgate/admin",
	"metrics":    "github.com/flowgate/flowgate/metrics",
	"cluster":    "github.com/flowgate/flowgate/cluster",
	"remote":     "github.com/flowgate/flowgate/cluster/remote",
	"clock":      "github.com/flowgate/flowgate/clock",
	"warmup":     "github.com/flowgate/flowgate/tokenbucket",
	"grpc":       "google.golang.org/grpc",
	"redis":      "github.com/redis/go-redis/v9",
	"clientv3":   "go.etcd.io/etcd/client/v3",
	"prometheus": "github.com/prometheus/client_golang/prometheus",
	"promhttp":   "github.com/prometheus/client_golang/prometheus/promhttp",
	"sdkmetric":  "go.opentelemetry.io/otel/sdk/metric",
}

// docModuleImports are the extra imports of a block checked in a module of
// its own under contrib/.
var docModuleImports = map[string]map[string]string{
	"contrib/gin": {
		"gin":     "github.com/gin-gonic/gin",
		"flowgin": "github.com/flowgate/flowgate/contrib/gin",
	},
	"contrib/echo": {
		"echo":     "github.com/labstack/echo/v4",
		"flowecho": "github.com/flowgate/flowgate/contrib/echo",
	},
}

// docParams are the values a statement snippet may use without declaring
// them: the parameters of the function it is checked in.
const docParams = `ctx context.Context, eng *flow.Engine, logger *slog.Logger,
	userID, clientIP, ip, tenant, app, path string,
	w, watcher *rules.Watcher, ctl *adaptive.Controller, al *alerting.Alerter,
	proxies []netip.Prefix, tlsCfg *tls.Config, mux *http.ServeMux,
	getOrder, listOrders, healthz http.HandlerFunc, orders http.Handler,
	fetchRates, serveCachedRates func(context.Context) error`

// docModuleParams are docParams for a block checked under contrib/.
const docModuleParams = `eng *flow.Engine, proxies []netip.Prefix`

// docBlock is one fenced code block of a Markdown file.
type docBlock struct {
	file string // relative to the repository root, slash-separated
	line int    // line of the block's first line of code
	info string // the fence's info string ("go", "json fragment")
	text string // the code, the fence's indentation removed
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// guideFiles returns README.md and docs/*.md.
func guideFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, pages...)
}

// fenceRE matches a fence line: its indentation, the fence, the info string.
var fenceRE = regexp.MustCompile("^( *)(```+)\\s*(.*)$")

// readBlocks returns the fenced code blocks of a Markdown file, and the file's
// lines with every fenced block blanked (for the link and heading scans).
func readBlocks(t *testing.T, file string) (blocks []docBlock, prose []string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var (
		cur    *docBlock
		indent int
		fence  string
		body   []string
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := fenceRE.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			cur = &docBlock{file: filepath.ToSlash(file), line: n + 1, info: strings.TrimSpace(m[3])}
			indent, fence, body = len(m[1]), m[2], nil
			prose = append(prose, "")
		case cur != nil && m != nil && m[2] == fence && m[3] == "":
			cur.text = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur = nil
			prose = append(prose, "")
		case cur != nil:
			for i := 0; i < indent && strings.HasPrefix(line, " "); i++ {
				line = line[1:]
			}
			body = append(body, line)
			prose = append(prose, "")
		default:
			prose = append(prose, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Errorf("%s: code block not closed", cur)
	}
	return blocks, prose
}

func lang(info string) string {
	if f := strings.Fields(info); len(f) > 0 {
		return f[0]
	}
	return ""
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces turned into hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown file's headings.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	_, prose := readBlocks(t, file)
	seen := map[string]int{}
	out := map[string]bool{}
	for _, line := range prose {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if k := seen[s]; k > 0 {
			out[fmt.Sprintf("%s-%d", s, k)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestDocsLinks(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	files := append(guideFiles(t), "bench/README.md")
	linked := map[string]bool{}
	anchorCache := map[string]map[string]bool{}
	for _, file := range files {
		_, prose := readBlocks(t, file)
		for i, line := range prose {
			line = inlineCodeRE.ReplaceAllString(line, "")
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				where := fmt.Sprintf("%s:%d: link %q", file, i+1, target)
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
					abs, err := filepath.Abs(dest)
					if err != nil || (abs != root && !strings.HasPrefix(abs, root+string(filepath.Separator))) {
						t.Errorf("%s: points outside the repository", where)
						continue
					}
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s: %v", where, err)
						continue
					}
				}
				if file == "README.md" {
					linked[filepath.ToSlash(filepath.Clean(dest))] = true
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s: an anchor into a file that is not Markdown", where)
					continue
				}
				a, ok := anchorCache[dest]
				if !ok {
					a = anchors(t, dest)
					anchorCache[dest] = a
				}
				if !a[anchor] {
					t.Errorf("%s: no heading with anchor #%s in %s", where, anchor, dest)
				}
			}
		}
	}
	for _, page := range guideFiles(t)[1:] {
		if !linked[filepath.ToSlash(page)] {
			t.Errorf("README.md does not link %s", page)
		}
	}
}

func TestDocsRuleBlocks(t *testing.T) {
	n := 0
	for _, file := range guideFiles(t) {
		blocks, _ := readBlocks(t, file)
		for _, b := range blocks {
			if lang(b.info) != "json" || slices.Contains(strings.Fields(b.info), "fragment") {
				continue
			}
			n++
			var top map[string]json.RawMessage
			if err := json.Unmarshal([]byte(b.text), &top); err != nil {
				t.Errorf("%s: not a JSON object (mark a block that is not a rules document ```json fragment): %v", b, err)
				continue
			}
			doc := []byte(b.text)
			switch {
			case top["rules"] != nil:
			case top["id"] != nil || top["algorithm"] != nil:
				doc = []byte(`{"rules": [` + b.text + `]}`)
			default:
				t.Errorf("%s: neither a rules document nor a rule (mark it ```json fragment)", b)
				continue
			}
			if _, err := rules.Parse(doc); err != nil {
				t.Errorf("%s: rules.Parse: %v", b, err)
			}
		}
	}
	if n == 0 {
		t.Error("no rules document found in the guide")
	}
}

// goBlockModule returns the module directory a Go block is checked in: ""
// for the core, or contrib/NAME for a block that starts with its go get line.
func goBlockModule(b docBlock) string {
	first, _, _ := strings.Cut(b.text, "\n")
	const prefix = "// go get github.com/flowgate/flowgate/"
	if rest, ok := strings.CutPrefix(strings.TrimSpace(first), prefix); ok && strings.HasPrefix(rest, "contrib/") {
		return rest
	}
	return ""
}

// docSource is a Go block turned into a file to check, and whether unused
// imports and variables are forgiven in it.
type docSource struct {
	block   docBlock
	src     string
	lenient bool
}

// wrapGoBlock turns a block into a file, by the three kinds of TestDocsGoBlocks.
func wrapGoBlock(b docBlock, module string) (docSource, error) {
	lineDirective := fmt.Sprintf("//line %s:%d\n", b.file, b.line)
	if f, err := parser.ParseFile(token.NewFileSet(), b.file, b.text, parser.PackageClauseOnly); err == nil && f.Name != nil {
		return docSource{block: b, src: lineDirective + b.text}, nil
	}
	imports, params := docImports, docParams
	if module != "" {
		imports = map[string]string{}
		for _, name := range []string{"context", "http", "netip", "flow", "flowhttp"} {
			imports[name] = docImports[name]
		}
		for name, path := range docModuleImports[module] {
			imports[name] = path
		}
		params = docModuleParams
	}
	var head strings.Builder
	head.WriteString("package docblock\n\nimport (\n")
	for name, path := range imports {
		fmt.Fprintf(&head, "\t%s %q\n", name, path)
	}
	head.WriteString(")\n\n")
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+b.text, 0); err == nil {
		return docSource{block: b, src: head.String() + lineDirective + b.text, lenient: true}, nil
	}
	src := head.String() + "func docBlock(" + params + ") error {\n{\n" + lineDirective + b.text + "}\nreturn nil\n}\n"
	if _, err := parser.ParseFile(token.NewFileSet(), "", src, 0); err != nil {
		return docSource{}, err
	}
	return docSource{block: b, src: src, lenient: true}, nil
}

// exportData asks the go command, run in dir, to build imports and their
// dependencies and say where each package's export data is.
func exportData(t *testing.T, dir string, imports []string) map[string]string {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, imports...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if dir != "." && dir != "" {
		// A module of its own requires a released core; the repository's
		// go.work puts this tree in its place (make test runs the core's
		// tests with GOWORK=off).
		work, err := filepath.Abs("go.work")
		if err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(os.Environ(), "GOWORK="+work)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export in %s: %v\n%s", dir, err, stderr.String())
	}
	files := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, "\t"); ok && file != "" {
			files[path] = file
		}
	}
	return files
}

func TestDocsGoBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the module's export data with go list; run without -short")
	}
	byModule := map[string][]docSource{}
	for _, file := range guideFiles(t) {
		blocks, _ := readBlocks(t, file)
		for _, b := range blocks {
			if lang(b.info) != "go" {
				continue
			}
			module := goBlockModule(b)
			if module != "" && docModuleImports[module] == nil {
				t.Errorf("%s: no module %s known to this test", b, module)
				continue
			}
			s, err := wrapGoBlock(b, module)
			if err != nil {
				t.Errorf("%s: does not parse as a file, declarations or statements: %v", b, err)
				continue
			}
			byModule[module] = append(byModule[module], s)
		}
	}
	if len(byModule[""]) == 0 {
		t.Fatal("no Go block found in the guide")
	}
	for module, sources := range byModule {
		fset := token.NewFileSet()
		var files []*ast.File
		need := map[string]bool{}
		for _, s := range sources {
			f, err := parser.ParseFile(fset, "docblock.go", s.src, parser.ParseComments)
			if err != nil {
				t.Errorf("%s: %v", s.block, err)
				files = append(files, nil)
				continue
			}
			files = append(files, f)
			for _, imp := range f.Imports {
				need[strings.Trim(imp.Path.Value, `"`)] = true
			}
		}
		dir := "."
		if module != "" {
			dir = filepath.FromSlash(module)
		}
		exports := exportData(t, dir, slices.Sorted(maps.Keys(need)))
		imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
			file, ok := exports[path]
			if !ok {
				return nil, fmt.Errorf("no export data for %s", path)
			}
			return os.Open(file)
		})
		for i, s := range sources {
			if files[i] == nil {
				continue
			}
			var errs []string
			conf := types.Config{Importer: imp, Error: func(err error) {
				te, ok := err.(types.Error)
				if ok && s.lenient && te.Soft && strings.Contains(te.Msg, "not used") {
					return
				}
				errs = append(errs, err.Error())
			}}
			conf.Check("docblock", fset, []*ast.File{files[i]}, nil)
			if len(errs) > 0 {
				t.Errorf("Go block at %s does not compile:\n\t%s", s.block, strings.Join(errs, "\n\t"))
			}
		}
	}
}
