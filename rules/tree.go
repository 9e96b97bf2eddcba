package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	members []member // kindObject
	elems   []*node  // kindArray
}

type member struct {
	key string
	val *node
}

// parseTree checks the syntax of data and returns its value tree. A syntax
// error names the line and column (1-based, in characters) where it is.
func parseTree(data []byte) (*node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty document")
	}
	// json.Unmarshal reports a consistent offset (just after the bad byte);
	// the token decoder's offsets are not, so check syntax with it first.
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			atEnd := se.Error() == "unexpected end of JSON input"
			line, col := position(data, se.Offset, atEnd)
			return nil, fmt.Errorf("line %d, column %d: %s", line, col, syntaxMessage(se, atEnd))
		}
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readValue(dec)
	if err != nil { // unreachable after Unmarshal accepted data; kept for safety
		return nil, err
	}
	return n, nil
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

func readValue(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: kindNull}, nil
	case bool:
		return &node{kind: kindBool, boolean: t}, nil
	case json.Number:
		return &node{kind: kindNumber, text: string(t)}, nil
	case string:
		return &node{kind: kindString, text: t}, nil
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: kindObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string)
				v, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				n.members = append(n.members, member{key: key, val: v})
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return n, nil
		case '[':
			n := &node{kind: kindArray}
			for dec.More() {
				v, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}
