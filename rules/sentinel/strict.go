package sentinel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flowgate/flowgate/rules"
)

// problems collects an import's problems, the first rules.MaxProblems of
// them: past those, over is set and the readers stop.
type problems struct {
	list []error
	over bool
}

func (p *problems) add(e *FieldError) {
	if p.full() {
		return
	}
	p.list = append(p.list, e)
}

// full reports whether one more problem would be left out (and notes that
// the caller has one), so that a reader can stop.
func (p *problems) full() bool {
	if len(p.list) >= rules.MaxProblems {
		p.over = true
		return true
	}
	return false
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	if p.over {
		return errors.Join(append(p.list, &FieldError{Index: -1,
			Msg: fmt.Sprintf("more than %d problems (rules.MaxProblems): only the first %d are listed", rules.MaxProblems, rules.MaxProblems)})...)
	}
	return errors.Join(p.list...)
}

// strictJSON reports what encoding/json would change without a word in a
// rule file that is valid JSON: a key given twice in one object (it keeps
// the last) and a string or key that is not valid UTF-8 (it puts U+FFFD
// in), each with its path. data is the element at index of the file's
// array. It reports whether it found none.
func strictJSON(file string, index int, data []byte, p *problems) bool {
	s := &strictScan{dec: json.NewDecoder(bytes.NewReader(data)), data: data, file: file, p: p, index: index}
	before := len(p.list)
	s.value("")
	return len(p.list) == before && !p.over
}

type strictScan struct {
	dec   *json.Decoder
	data  []byte
	file  string
	p     *problems
	index int   // the rule's position in the file's array
	prev  int64 // input offset after the previous token
}

// token reads the next token and the raw text of a string token.
func (s *strictScan) token() (json.Token, []byte, bool) {
	start := s.prev
	tok, err := s.dec.Token()
	s.prev = s.dec.InputOffset()
	if err != nil {
		return nil, nil, false
	}
	if _, ok := tok.(string); !ok {
		return tok, nil, true
	}
	// Only space, ':' and ',' come between tokens: the string starts at
	// the first '"' after the previous token.
	for start < s.prev && s.data[start] != '"' {
		start++
	}
	return tok, s.data[start:s.prev], true
}

func (s *strictScan) fail(field, msg string) {
	s.p.add(&FieldError{File: s.file, Index: s.index, Field: field, Msg: msg})
}

// value checks the value at the decoder, at path.
func (s *strictScan) value(path string) {
	tok, raw, ok := s.token()
	if !ok || s.p.over {
		return
	}
	switch t := tok.(type) {
	case string:
		if badString(raw, t) {
			s.fail(path, "not valid UTF-8 (invalid bytes or a lone \\u surrogate)")
		}
	case json.Delim:
		if t == '[' {
			for i := 0; s.dec.More() && !s.p.over; i++ {
				s.value(fmt.Sprintf("%s[%d]", path, i))
			}
		} else if t == '{' {
			s.object(path)
		}
		s.token() // the closing delimiter
	}
}

// object checks the members of an object whose '{' was read.
func (s *strictScan) object(path string) {
	seen := map[string]bool{}
	for s.dec.More() && !s.p.over {
		tok, raw, ok := s.token()
		if !ok {
			return
		}
		key := tok.(string)
		switch {
		case badString(raw, key):
			s.fail(join(path, strconv.QuoteToASCII(key)), "key not valid UTF-8 (invalid bytes or a lone \\u surrogate)")
		case seen[key]:
			s.fail(join(path, key), "given more than once (a JSON reader would keep only the last)")
		}
		seen[key] = true
		s.value(join(path, key))
	}
}

// badString reports whether decoding the JSON string raw (quotes
// included) into s put in a U+FFFD that raw did not ask for: raw holds
// invalid UTF-8, or a \u escape of a lone surrogate.
func badString(raw []byte, s string) bool {
	if !utf8.Valid(raw) {
		return true
	}
	asked := bytes.Count(raw, []byte("\uFFFD")) + bytes.Count(bytes.ToLower(raw), []byte(`\ufffd`))
	return strings.Count(s, "\uFFFD") > asked
}

// join appends a key to a field path: "rule" and "resource" make
// "rule.resource".
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
