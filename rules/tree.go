package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// kind is the JSON type of a value, named as a person would in a message.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// node is one JSON value. Objects keep their members in document order and
// with duplicates, so that a key given twice is reported instead of silently
// taking the last value as encoding/json does.
type node struct {
	kind    kind
	text    string // string value, or the literal of a number
	boolean bool
	badText bool     // kindString: invalid UTF-8 or a lone surrogate, read as U+FFFD
	lazy    bool     // kindArray: the document's "rules", read by elements, elems empty
	members []member // kindObject
	elems   []*node  // kindArray
}

type member struct {
	key string
	val *node
}

// parseTree checks the syntax of data and returns its value tree, and the
// text of its "rules" array, whose node in the tree is lazy. A syntax
// error is a *FieldError with the line and column (1-based, in characters)
// where it is. A leading UTF-8 byte order mark, which some editors write,
// is skipped.
func parseTree(data []byte) (root *node, rules []byte, err error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, &FieldError{Index: -1, Msg: "empty document"}
	}
	if !json.Valid(data) {
		// json.Unmarshal reports a consistent offset (just after the bad
		// byte); json.Valid, cheaper, only says whether there is one.
		var raw json.RawMessage
		err = json.Unmarshal(data, &raw)
		var se *json.SyntaxError
		if !errors.As(err, &se) { // not expected: Valid and Unmarshal agree
			return nil, nil, &FieldError{Index: -1, Msg: fmt.Sprintf("invalid JSON: %v", err)}
		}
		atEnd := se.Error() == "unexpected end of JSON input"
		fe := &FieldError{Index: -1, Msg: syntaxMessage(se, atEnd)}
		fe.Line, fe.Column = position(data, se.Offset, atEnd)
		return nil, nil, fe
	}
	t := &treeReader{data: data}
	root = t.value()
	return root, t.rules, nil
}

// syntaxMessage words encoding/json's syntax errors for a person editing a file.
func syntaxMessage(se *json.SyntaxError, atEnd bool) string {
	msg := se.Error()
	if atEnd {
		return "unexpected end of input (truncated document?)"
	}
	return msg
}

// position turns the offset of a json.SyntaxError into a line and column.
// encoding/json counts the bad byte as read, so it is the one before offset;
// a truncated document is pointed at just past its last character.
func position(data []byte, offset int64, atEnd bool) (line, col int) {
	idx := int(offset) - 1
	if atEnd {
		idx = len(bytes.TrimRight(data, " \t\r\n"))
	}
	idx = max(0, min(idx, len(data)))
	line = 1 + bytes.Count(data[:idx], []byte("\n"))
	start := bytes.LastIndexByte(data[:idx], '\n') + 1
	col = utf8.RuneCount(data[start:idx]) + 1
	return line, col
}

// treeReader builds the tree of a document json.Valid accepted, so it can
// skip every syntax check (encoding/json's Decoder.Token is several times
// slower, and a 10 000-rule file is read on every reload).
//
// The document's "rules" array is not built: its node is lazy, and rules
// reads its elements one at a time (elements), so that neither a huge
// valid document nor a million bad rules is ever held as one tree, and
// reading can stop at MaxProblems.
type treeReader struct {
	data  []byte
	i     int
	depth int // objects and arrays the reader is inside
	// rules is the text of the first "rules" array of the top-level
	// object, from '[' to ']'; nil when there is none.
	rules []byte
}

func (t *treeReader) skipSpace() {
	for t.i < len(t.data) {
		switch t.data[t.i] {
		case ' ', '\t', '\n', '\r':
			t.i++
		default:
			return
		}
	}
}

func (t *treeReader) value() *node {
	t.skipSpace()
	switch c := t.data[t.i]; c {
	case '{':
		return t.object()
	case '[':
		t.i++
		t.depth++
		n := &node{kind: kindArray}
		for e := t.next(); e != nil; e = t.next() {
			n.elems = append(n.elems, e)
		}
		t.depth--
		return n
	case '"':
		s, bad := t.str()
		return &node{kind: kindString, text: s, badText: bad}
	case 't':
		t.i += len("true")
		return &node{kind: kindBool, boolean: true}
	case 'f':
		t.i += len("false")
		return &node{kind: kindBool}
	case 'n':
		t.i += len("null")
		return &node{kind: kindNull}
	default: // a number
		start := t.i
		for t.i < len(t.data) && strings.IndexByte("+-0123456789.eE", t.data[t.i]) >= 0 {
			t.i++
		}
		return &node{kind: kindNumber, text: string(t.data[start:t.i])}
	}
}

// next reads the next element of the array the reader is in, or consumes
// its ']' and returns nil.
func (t *treeReader) next() *node {
	t.skipSpace()
	if t.data[t.i] == ']' {
		t.i++
		return nil
	}
	if t.data[t.i] == ',' {
		t.i++
	}
	return t.value()
}

// object reads the object at t.i. The top-level object's "rules" array is
// skipped over and left lazy.
func (t *treeReader) object() *node {
	t.i++
	t.depth++
	defer func() { t.depth-- }()
	n := &node{kind: kindObject}
	for {
		t.skipSpace()
		if t.data[t.i] == '}' {
			t.i++
			return n
		}
		if t.data[t.i] == ',' {
			t.i++
			t.skipSpace()
		}
		key, _ := t.str() // a bad key is an unknown field anyway
		t.skipSpace()
		t.i++ // ':'
		t.skipSpace()
		if t.depth == 1 && key == "rules" && t.data[t.i] == '[' {
			start := t.i
			t.skip()
			if t.rules == nil {
				t.rules = t.data[start:t.i]
			}
			n.members = append(n.members, member{key: key, val: &node{kind: kindArray, lazy: true}})
			continue
		}
		n.members = append(n.members, member{key: key, val: t.value()})
	}
}

// skip moves past the value at t.i without building it.
func (t *treeReader) skip() {
	switch t.data[t.i] {
	case '"':
		t.skipString()
		return
	case '[', '{':
	default: // a literal or a number: up to the next delimiter
		for t.i < len(t.data) && strings.IndexByte(",]} \t\r\n", t.data[t.i]) < 0 {
			t.i++
		}
		return
	}
	for depth := 0; ; {
		switch t.data[t.i] {
		case '"':
			t.skipString()
			continue
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		}
		t.i++
		if depth == 0 {
			return
		}
	}
}

// skipString moves past the string at t.i.
func (t *treeReader) skipString() {
	t.i++
	for t.data[t.i] != '"' {
		if t.data[t.i] == '\\' {
			t.i++
		}
		t.i++
	}
	t.i++
}

// elements reads the lazy array text arr (a treeReader's rules) one element
// at a time, calling fn with each until fn returns false, and returns how
// many elements arr has, counting without reading those after fn stopped.
func elements(arr []byte, fn func(i int, e *node) bool) int {
	t := &treeReader{data: arr, i: 1, depth: 1}
	i := 0
	for ; ; i++ {
		e := t.next()
		if e == nil {
			return i
		}
		if !fn(i, e) {
			break
		}
	}
	for i++; ; i++ { // count the rest
		t.skipSpace()
		if t.data[t.i] == ']' {
			return i
		}
		if t.data[t.i] == ',' {
			t.i++
			t.skipSpace()
		}
		t.skip()
	}
}

// str reads a string at t.i. Plain ASCII/UTF-8 strings are sliced out;
// those with escapes or invalid UTF-8 go through encoding/json, which
// decodes \u escapes and replaces bad bytes with U+FFFD. bad reports that
// such a replacement happened: the name read is not the one written, so the
// reader says so instead of guarding a resource nobody calls.
func (t *treeReader) str() (s string, bad bool) {
	start := t.i
	t.i++ // opening quote
	plain := true
	for {
		c := t.data[t.i]
		if c == '"' {
			break
		}
		if c == '\\' {
			plain = false
			t.i++ // the escaped byte cannot end the string
		} else if c >= utf8.RuneSelf {
			plain = false
		}
		t.i++
	}
	t.i++ // closing quote
	if plain {
		raw := t.data[start+1 : t.i-1]
		if k, ok := interned[string(raw)]; ok { // no allocation: the compiler's map lookup by []byte
			return k, false
		}
		return string(raw), false
	}
	raw := t.data[start+1 : t.i-1]
	_ = json.Unmarshal(t.data[start:t.i], &s) // valid: json.Valid passed
	return s, replaced(raw, s)
}

// replaced reports whether decoding raw into s put in a U+FFFD that raw did
// not ask for: raw holds invalid UTF-8, or a \u escape of a lone surrogate.
func replaced(raw []byte, s string) bool {
	if !utf8.Valid(raw) {
		return true
	}
	asked := bytes.Count(raw, []byte("\uFFFD")) + bytes.Count(raw, []byte("\ufffd")) +
		bytes.Count(raw, []byte(string(utf8.RuneError)))
	return strings.Count(s, string(utf8.RuneError)) > asked
}

// interned holds the strings every document repeats (field names, levels,
// algorithms), so reading a large document does not allocate them per rule.
// Built once and never modified.
var interned = func() map[string]string {
	m := map[string]string{}
	for _, list := range [][]string{ruleKeys, adaptiveKeys, alertingKeys, levelNames(), algorithmNames(), strategyNames(),
		{"rules", "$schema", "adaptive", "alerting", "threshold", "fallback", "global", "per_instance", "local", "allow", "deny"}} {
		for _, k := range list {
			m[k] = k
		}
	}
	return m
}()
