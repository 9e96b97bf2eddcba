package sentinel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/flowgate/flowgate/rules"
)

// isYAML tells a YAML rule file from a JSON one: by its extension, or by
// content that cannot start a JSON document (a YAML "- resource: ..."
// list). A JSON file keeps the JSON reader and its byte offsets.
func isYAML(name string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return false
	}
	return len(data) > 0 && data[0] != '[' && data[0] != '{'
}

// MaxYAMLBytes bounds a YAML source file, below rules.MaxDocumentBytes: the
// YAML library holds its whole tree, some 200 bytes per byte of input, so
// a file at this bound costs about 200 MB to read. Sentinel rule files
// are a few kilobytes.
const MaxYAMLBytes = 1 << 20

// yamlToJSON turns a YAML rule array into the JSON the readers take, so
// that one set of readers (and one set of error messages) serves both.
// sentinel-golang's rule structs have JSON names only; YAML files use the
// same names.
//
// Scalars are kept as written: a string (quoted or not, and a plain
// scalar YAML would read as a timestamp, such as 2024-01-01) is the same
// text in JSON; a number is written as it was when it is a JSON number,
// else as YAML reads it (0x10 as 16); true, false and null stay. So a
// number given where a string is wanted is refused, not turned into text.
// A key given twice, a string that is not valid UTF-8, a non-finite number
// and aliases that expand past rules.MaxDocumentBytes are problems with
// their path. It reports whether there were none.
func yamlToJSON(file string, data []byte, p *problems) ([]byte, bool) {
	if len(data) > MaxYAMLBytes {
		p.add(&FieldError{File: file, Index: -1, Msg: fmt.Sprintf("%d bytes of YAML: more than %d (sentinel.MaxYAMLBytes)", len(data), MaxYAMLBytes)})
		return nil, false
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		p.add(&FieldError{File: file, Index: -1, Msg: "not a YAML array of rules: " + err.Error()})
		return nil, false
	}
	if len(root.Content) == 0 {
		return []byte("[]"), true
	}
	top := root.Content[0]
	if top.Kind != yaml.SequenceNode {
		p.add(&FieldError{File: file, Index: -1, Msg: "not a YAML array of rules: the document is a " + yamlKind(top) + ", not a sequence"})
		return nil, false
	}
	w := &yamlWriter{file: file, p: p}
	before := len(p.list)
	w.buf.WriteByte('[')
	for i, n := range top.Content {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		w.index = i
		w.node(n, "", 1)
		if p.over {
			break
		}
	}
	w.buf.WriteByte(']')
	return w.buf.Bytes(), len(p.list) == before && !p.over
}

// maxYAMLDepth bounds the nesting the converter follows (Sentinel rules
// nest two or three levels; aliases can nest without end).
const maxYAMLDepth = 32

type yamlWriter struct {
	buf   bytes.Buffer
	file  string
	p     *problems
	index int
}

func (w *yamlWriter) fail(path, msg string) {
	w.p.add(&FieldError{File: w.file, Index: w.index, Field: path, Msg: msg})
}

// node writes n as JSON.
func (w *yamlWriter) node(n *yaml.Node, path string, depth int) {
	if w.p.over {
		return
	}
	if depth > maxYAMLDepth || w.buf.Len() > rules.MaxDocumentBytes {
		w.fail(path, fmt.Sprintf("nested deeper than %d or expanding past %d bytes (rules.MaxDocumentBytes)", maxYAMLDepth, rules.MaxDocumentBytes))
		return
	}
	switch n.Kind {
	case yaml.AliasNode:
		w.node(n.Alias, path, depth+1)
	case yaml.SequenceNode:
		w.buf.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			w.node(e, fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
		w.buf.WriteByte(']')
	case yaml.MappingNode:
		w.mapping(n, path, depth)
	default:
		w.scalar(n, path)
	}
}

// mapping writes a mapping: its own keys (each once), then those its
// merge keys (<<) bring in that it does not have.
func (w *yamlWriter) mapping(n *yaml.Node, path string, depth int) {
	seen := map[string]bool{}
	var merges []*yaml.Node
	w.buf.WriteByte('{')
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		key := k.Value
		switch {
		case k.Kind != yaml.ScalarNode:
			w.fail(path, "a key must be a scalar")
			continue
		case !utf8.ValidString(key):
			w.fail(join(path, strconv.QuoteToASCII(key)), "key not valid UTF-8")
			continue
		case seen[key]:
			w.fail(join(path, key), "given more than once")
			continue
		}
		w.member(seen, key, v, path, depth)
	}
	for _, m := range merges {
		for m.Kind == yaml.AliasNode {
			m = m.Alias
		}
		from := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			from = m.Content
		}
		for _, f := range from {
			for f.Kind == yaml.AliasNode {
				f = f.Alias
			}
			if f.Kind != yaml.MappingNode {
				w.fail(join(path, "<<"), "must merge a mapping")
				continue
			}
			for i := 0; i+1 < len(f.Content); i += 2 {
				if k := f.Content[i]; k.Kind == yaml.ScalarNode && !seen[k.Value] && k.ShortTag() != "!!merge" {
					w.member(seen, k.Value, f.Content[i+1], path, depth)
				}
			}
		}
	}
	w.buf.WriteByte('}')
}

// member writes one "key": value pair of a mapping.
func (w *yamlWriter) member(seen map[string]bool, key string, v *yaml.Node, path string, depth int) {
	if len(seen) > 0 {
		w.buf.WriteByte(',')
	}
	seen[key] = true
	w.quote(key)
	w.buf.WriteByte(':')
	w.node(v, join(path, key), depth+1)
}

// scalar writes a scalar as written (see yamlToJSON).
func (w *yamlWriter) scalar(n *yaml.Node, path string) {
	switch n.ShortTag() {
	case "!!null":
		w.buf.WriteString("null")
		return
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			w.buf.WriteString(strconv.FormatBool(b))
			return
		}
	case "!!int", "!!float":
		if json.Valid([]byte(n.Value)) {
			w.buf.WriteString(n.Value)
			return
		}
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			w.fail(path, fmt.Sprintf("%.40q: not a finite number", n.Value))
			w.buf.WriteString("null")
			return
		}
		w.buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		return
	}
	if !utf8.ValidString(n.Value) {
		w.fail(path, "not valid UTF-8 (invalid bytes or a lone \\u surrogate)")
	}
	w.quote(n.Value)
}

// quote writes s as a JSON string.
func (w *yamlWriter) quote(s string) {
	b, _ := json.Marshal(s) // a string always encodes
	w.buf.Write(b)
}

func yamlKind(n *yaml.Node) string {
	if n.Kind == yaml.MappingNode {
		return "mapping"
	}
	return "scalar"
}
