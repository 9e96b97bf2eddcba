package sentinel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// Dialect is the Sentinel flavour a file is read as.
type Dialect int

const (
	Auto   Dialect = iota // told from each rule's fields
	Java                  // Alibaba Sentinel (Java) and its dashboard
	Golang                // sentinel-golang
)

func (d Dialect) String() string {
	switch d {
	case Java:
		return "java"
	case Golang:
		return "go"
	}
	return "auto"
}

// ParseDialect reads "auto", "java" or "go".
func ParseDialect(s string) (Dialect, error) {
	switch s {
	case "", "auto":
		return Auto, nil
	case "java":
		return Java, nil
	case "go", "golang":
		return Golang, nil
	}
	return Auto, fmt.Errorf("unknown dialect %q (valid: auto, java, go)", s)
}

// Options tune an import. The zero value detects dialects and names Java's
// parameter indexes arg0, arg1...
type Options struct {
	Dialect Dialect
	// ParamNames names the call arguments that Java's paramIdx and
	// sentinel-golang's paramIndex point at, for flowgate's WithParam.
	// An index missing here is named "arg<index>".
	ParamNames map[int]string
	// AllowEmpty lets input holding no rule at all import to an empty
	// document. Without it that is an error: loaded, an empty document
	// removes every limit, which an empty or truncated export should not do.
	AllowEmpty bool
	// RenameHTTP turns Sentinel's web resource names, "METHOD:/path" (its
	// Spring and servlet adapters with the method prefix), into flowhttp's
	// route names, "METHOD /path", in resource and refResource. Without
	// it names are kept and each that looks like an HTTP route is warned
	// about in its report.
	RenameHTTP bool
}

// File is one source file: its name (for messages) and contents, a JSON
// array of rules of one kind as Sentinel's datasources store them, or the
// same array in YAML (a name ending in .yaml or .yml, or contents that do
// not start with '[' or '{'), with the same field names.
type File struct {
	Name string
	Data []byte
}

// Verdict says how faithfully a source rule was carried over.
type Verdict int

const (
	Exact  Verdict = iota // flowgate decides as Sentinel does
	Approx                // carried over; Note says what differs
	Cannot                // left out; Note says why
)

func (v Verdict) String() string {
	switch v {
	case Exact:
		return "exact"
	case Approx:
		return "approx"
	}
	return "cannot"
}

// Report is the outcome for one source rule.
type Report struct {
	File     string
	Index    int    // position in the file's array
	Kind     string // e.g. "java flow", "go circuit-breaker"
	Resource string
	Verdict  Verdict
	Note     string   // what differs (Approx) or why not (Cannot)
	IDs      []string // the flowgate rules written for it; a system rule's: "adaptive.systemCPU"
	// Renamed is the flowgate resource when it differs from Resource
	// (Options.RenameHTTP).
	Renamed string
	// Unknown lists the fields of the source element that no Sentinel
	// rule of its kind has, by path ("rule.foo", "paramFlowItemList[0].x").
	// They make the verdict at least Approx: Sentinel may give them a
	// meaning the import did not read.
	Unknown []string
	// Warnings are what does not change how the rule decides but may
	// keep it from applying: a resource named like an HTTP route that
	// flowhttp would name otherwise.
	Warnings []string
}

// String is the report line `flowgate rules import` prints.
func (r Report) String() string {
	s := fmt.Sprintf("%s[%d] %s %q", r.File, r.Index, r.Kind, r.Resource)
	if r.Renamed != "" {
		s += fmt.Sprintf(" as %q", r.Renamed)
	}
	s += ": " + r.Verdict.String()
	if len(r.IDs) > 0 {
		s += " -> " + strings.Join(r.IDs, ", ")
	}
	if r.Note != "" {
		s += ": " + r.Note
	}
	for _, w := range r.Warnings {
		s += "; warning: " + w
	}
	return s
}

// Result is an import: the document of every rule that could be carried
// over, and one report per source rule.
type Result struct {
	Document *rules.Document
	Reports  []Report
}

// Cannot counts the source rules left out.
func (r *Result) Cannot() int {
	n := 0
	for _, rep := range r.Reports {
		if rep.Verdict == Cannot {
			n++
		}
	}
	return n
}

// Import reads Sentinel rule files and returns one flowgate document.
// Malformed input is an error listing every problem with its file, array
// index and field (rules.Problems-style: errors.Join of *FieldError); a
// rule that is well formed but has no flowgate counterpart is a Cannot
// report, not an error.
func Import(files []File, opts Options) (*Result, error) {
	errs := &problems{}
	res := &Result{}
	ids := idMaker{used: map[string]bool{}, seen: map[string]int{}}
	var out []flow.Rule
	var sys system
	for _, f := range files {
		readFile(f, errs, func(e *element) {
			rep, rs := convert(e, opts, &sys)
			if len(errs.list) > 0 { // convert reads fields; a bad one lands in errs
				return
			}
			base := ids.base(rep) // counted for refused rules too, so that ids stay put
			if rep.Verdict != Cannot {
				for i := range rs {
					rs[i].ID = ids.make(rs[i].ID, base)
					if err := checkOne(rs[i]); err != nil {
						rep.Verdict, rep.Note, rs, rep.IDs = Cannot, "flowgate refuses the mapped rule: "+err.Error(), nil, nil
						break
					}
					rep.IDs = append(rep.IDs, rs[i].ID)
				}
				out = append(out, rs...)
				if strings.HasSuffix(rep.Kind, " system") {
					rep.IDs = []string{"adaptive.systemCPU"}
				}
			}
			res.Reports = append(res.Reports, rep)
		})
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	if len(res.Reports) == 0 && !opts.AllowEmpty {
		return nil, &FieldError{File: fileNames(files), Index: -1, Msg: "no rules: an empty document, loaded, " +
			"removes every limit; check the export (Options.AllowEmpty, --allow-empty, imports it anyway)"}
	}
	data, err := marshalDoc(out, sys)
	if err != nil {
		return nil, err
	}
	doc, err := rules.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("sentinel: the imported document does not parse (a bug): %w", err)
	}
	res.Document = doc
	return res, nil
}

// readFile splits a file into its rule objects. A file is a JSON array of
// objects; an empty file is an empty array, as Sentinel's datasources
// treat it. A file over rules.MaxDocumentBytes, a key given twice and a
// string that is not valid UTF-8 are refused with their path: read as
// encoding/json would, they would change without a word.
//
// Each element is handed to each as soon as it is read; past
// rules.MaxProblems reading stops.
func readFile(f File, errs *problems, each func(*element)) {
	if len(f.Data) > rules.MaxDocumentBytes {
		errs.add(&FieldError{File: f.Name, Index: -1,
			Msg: fmt.Sprintf("%d bytes: more than %d (rules.MaxDocumentBytes)", len(f.Data), rules.MaxDocumentBytes)})
		return
	}
	data := bytes.TrimSpace(f.Data)
	if len(data) == 0 {
		return
	}
	if isYAML(f.Name, data) {
		j, ok := yamlToJSON(f.Name, data, errs)
		if !ok {
			return
		}
		data = j
	}
	items, ok := fileArray(f.Name, data, errs)
	if !ok {
		return
	}
	var h fileHint
	for i, it := range items {
		if errs.over {
			return
		}
		e := &element{file: f.Name, index: i, errs: errs}
		if err := json.Unmarshal(it, &e.raw); err != nil || e.raw == nil {
			errs.add(&FieldError{File: f.Name, Index: i, Msg: "must be an object, got " + short(it)})
			continue
		}
		if strictJSON(f.Name, i, it, errs) {
			e.hint = h.dialect()
			each(e)
			h.add(e)
		}
	}
}

// fileHint follows the dialect of the rules read so far in a file: it
// names the dialect of a later rule whose kind is not found, since a file
// holds one kind.
type fileHint struct {
	found Dialect
	mixed bool
}

func (h *fileHint) add(e *element) {
	quiet := &element{file: e.file, index: e.index, raw: e.raw, errs: &problems{}} // e's problems are reported
	d, kind := kindOf(unwrap(quiet), Auto)
	switch {
	case kind == "":
	case h.found == Auto:
		h.found = d
	case h.found != d:
		h.mixed = true
	}
}

// dialect is the one dialect found so far, or Auto.
func (h *fileHint) dialect() Dialect {
	if h.mixed {
		return Auto
	}
	return h.found
}

// fileArray reads a file's array of rules. An object is accepted only as
// the Sentinel dashboard's API reply, {"success", "code", "msg", "data"}
// with the array in data; any other top-level value is refused by name.
func fileArray(name string, data []byte, errs *problems) ([]json.RawMessage, bool) {
	fail := func(msg string) ([]json.RawMessage, bool) {
		errs.add(&FieldError{File: name, Index: -1, Msg: msg})
		return nil, false
	}
	if !json.Valid(data) {
		var v any
		return fail("not valid JSON: " + jsonMsg(json.Unmarshal(data, &v)))
	}
	switch data[0] {
	case '[':
	case '{':
		var obj map[string]json.RawMessage
		_ = json.Unmarshal(data, &obj)
		for k := range obj {
			if k != "success" && k != "code" && k != "msg" && k != "data" {
				return fail(fmt.Sprintf("expected an array of rules, found an object (with %q; a single rule? put it in [ ])", k))
			}
		}
		inner := bytes.TrimSpace(obj["data"])
		if len(inner) == 0 || inner[0] != '[' {
			return fail("expected an array of rules, found an object whose data is not an array")
		}
		data = inner
	default:
		return fail("expected an array of rules, found " + short(data))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return fail("not a JSON array of rules: " + jsonMsg(err))
	}
	return items, true
}

func jsonMsg(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", err, se.Offset)
	}
	return err.Error()
}

// checkOne parses a one-rule document, so that a mapped rule flowgate
// refuses (a limit of 0, say) is reported against its source rule.
func checkOne(r flow.Rule) error {
	data, err := marshalDoc([]flow.Rule{r}, system{})
	if err != nil {
		return err
	}
	_, err = rules.Parse(data)
	if err == nil {
		return nil
	}
	var msgs []string
	for _, p := range rules.Problems(err) {
		msgs = append(msgs, p.Error())
	}
	return errors.New(strings.Join(msgs, "; "))
}

// idMaker gives each written rule a unique id that depends only on its
// source element: the source's id when it has one (sentinel-golang's),
// else "sentinel-<kind>/<resource>", with "#k" for the k-th (k ≥ 2)
// element of the same kind and resource across the files in order.
// Refused elements are counted too, so fixing one renames no other rule
// and keeps their state across a reload.
type idMaker struct {
	used map[string]bool
	seen map[string]int // elements per kind and resource
}

// base is the derived id of the element rep reports on; call it once per
// source element.
func (m *idMaker) base(rep Report) string {
	kind := strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(rep.Kind, "java "), "go "), " ", "-")
	b := "sentinel-" + kind + "/" + rep.Resource
	m.seen[b]++
	if k := m.seen[b]; k > 1 {
		b += "#" + strconv.Itoa(k)
	}
	return b
}

func (m *idMaker) make(want, base string) string {
	if want != "" && !m.used[want] {
		m.used[want] = true
		return want
	}
	id := base
	for n := 2; m.used[id]; n++ { // a source id took it, or one element wrote two rules
		id = base + "~" + strconv.Itoa(n)
	}
	m.used[id] = true
	return id
}

// fileNames names the input files in a message about all of them.
func fileNames(files []File) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
