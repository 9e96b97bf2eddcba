package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// This file holds a small JSON Schema validator for the subset schema.json
// uses (draft 2020-12: type, enum, const, properties, required,
// additionalProperties, items, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// minLength, maxLength, minItems, maxItems, minProperties, maxProperties, pattern, $ref to #/$defs,
// allOf, not, if/then/else, boolean
// schemas), so the schema can be tested against the parser without a
// third-party library. Patterns are written to mean the same in RE2 and
// ECMA-262.

type schemaValidator struct{ root map[string]any }

var schemaKeywords = map[string]bool{
	"type": true, "enum": true, "const": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "minLength": true, "pattern": true, "$ref": true, "allOf": true,
	"not": true, "if": true, "then": true, "else": true,
	"maxLength": true, "minItems": true, "maxItems": true, "minProperties": true, "maxProperties": true,
	// annotations
	"$schema": true, "$id": true, "$defs": true, "title": true, "description": true,
}

func loadSchema(t *testing.T) *schemaValidator {
	t.Helper()
	data, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	if root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v, want draft 2020-12", root["$schema"])
	}
	checkKeywords(t, root, "#")
	return &schemaValidator{root: root}
}

// checkKeywords fails on any keyword the validator below does not implement,
// so the schema cannot silently rely on one.
func checkKeywords(t *testing.T, s any, path string) {
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	for k, v := range m {
		if !schemaKeywords[k] {
			t.Errorf("%s: keyword %q is outside the tested subset", path, k)
		}
		switch k {
		case "properties", "$defs":
			for name, sub := range v.(map[string]any) {
				checkKeywords(t, sub, path+"/"+k+"/"+name)
			}
		case "allOf":
			for i, sub := range v.([]any) {
				checkKeywords(t, sub, fmt.Sprintf("%s/allOf/%d", path, i))
			}
		case "items", "not", "if", "then", "else", "additionalProperties":
			checkKeywords(t, v, path+"/"+k)
		}
	}
}

// validate returns the instance's violations of schema s (empty when valid).
func (v *schemaValidator) validate(s any, inst any, at string) []string {
	switch s := s.(type) {
	case bool:
		if !s {
			return []string{at + ": not allowed"}
		}
		return nil
	case map[string]any:
		var errs []string
		fail := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }
		if ref, ok := s["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/$defs/")
			errs = append(errs, v.validate(v.root["$defs"].(map[string]any)[name], inst, at)...)
		}
		if typ, ok := s["type"].(string); ok && !hasType(inst, typ) {
			fail("want %s", typ)
			return errs
		}
		if enum, ok := s["enum"].([]any); ok {
			found := false
			for _, e := range enum {
				found = found || equalJSON(e, inst)
			}
			if !found {
				fail("not one of %v", enum)
			}
		}
		if c, ok := s["const"]; ok && !equalJSON(c, inst) {
			fail("want %v", c)
		}
		if n, ok := inst.(json.Number); ok {
			f, _ := strconv.ParseFloat(string(n), 64) // ±Inf for out-of-range literals
			if m, ok := s["minimum"].(float64); ok && f < m {
				fail("below %v", m)
			}
			if m, ok := s["maximum"].(float64); ok && f > m {
				fail("above %v", m)
			}
			if m, ok := s["exclusiveMinimum"].(float64); ok && f <= m {
				fail("not above %v", m)
			}
			if m, ok := s["exclusiveMaximum"].(float64); ok && f >= m {
				fail("not below %v", m)
			}
		}
		if str, ok := inst.(string); ok {
			if m, ok := s["minLength"].(float64); ok && utf8.RuneCountInString(str) < int(m) {
				fail("shorter than %v", m)
			}
			if m, ok := s["maxLength"].(float64); ok && utf8.RuneCountInString(str) > int(m) {
				fail("longer than %v", m)
			}
			if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
				fail("does not match %s", p)
			}
		}
		if obj, ok := inst.(map[string]any); ok {
			if m, ok := s["minProperties"].(float64); ok && len(obj) < int(m) {
				fail("fewer than %v properties", m)
			}
			if m, ok := s["maxProperties"].(float64); ok && len(obj) > int(m) {
				fail("more than %v properties", m)
			}
			props, _ := s["properties"].(map[string]any)
			for _, r := range asSlice(s["required"]) {
				if _, ok := obj[r.(string)]; !ok {
					fail("%s required", r)
				}
			}
			for k, val := range obj {
				if sub, ok := props[k]; ok {
					errs = append(errs, v.validate(sub, val, at+"."+k)...)
				} else if ap, ok := s["additionalProperties"]; ok {
					errs = append(errs, v.validate(ap, val, at+"."+k)...)
				}
			}
		}
		if arr, ok := inst.([]any); ok {
			if m, ok := s["minItems"].(float64); ok && len(arr) < int(m) {
				fail("fewer than %v items", m)
			}
			if m, ok := s["maxItems"].(float64); ok && len(arr) > int(m) {
				fail("more than %v items", m)
			}
			if items, ok := s["items"]; ok {
				for i, el := range arr {
					errs = append(errs, v.validate(items, el, fmt.Sprintf("%s[%d]", at, i))...)
				}
			}
		}
		for _, sub := range asSlice(s["allOf"]) {
			errs = append(errs, v.validate(sub, inst, at)...)
		}
		if not, ok := s["not"]; ok && len(v.validate(not, inst, at)) == 0 {
			fail("matches a forbidden schema")
		}
		if cond, ok := s["if"]; ok {
			if len(v.validate(cond, inst, at)) == 0 {
				if then, ok := s["then"]; ok {
					errs = append(errs, v.validate(then, inst, at)...)
				}
			} else if els, ok := s["else"]; ok {
				errs = append(errs, v.validate(els, inst, at)...)
			}
		}
		return errs
	}
	return []string{at + ": bad schema"}
}

func asSlice(x any) []any { s, _ := x.([]any); return s }

func hasType(inst any, typ string) bool {
	switch typ {
	case "object":
		_, ok := inst.(map[string]any)
		return ok
	case "array":
		_, ok := inst.([]any)
		return ok
	case "string":
		_, ok := inst.(string)
		return ok
	case "boolean":
		_, ok := inst.(bool)
		return ok
	case "number":
		_, ok := inst.(json.Number)
		return ok
	case "integer":
		n, ok := inst.(json.Number)
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(n), 64)
		return err == nil && f == math.Trunc(f)
	}
	return false
}

func equalJSON(a, b any) bool {
	if n, ok := b.(json.Number); ok {
		f, _ := strconv.ParseFloat(string(n), 64)
		b = f
	}
	return a == b
}

// schemaAccepts reports whether data is JSON the schema accepts.
func (v *schemaValidator) accepts(data []byte) (bool, []string) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var inst any
	if err := dec.Decode(&inst); err != nil {
		return false, []string{err.Error()}
	}
	if dec.More() {
		return false, []string{"data after the document"}
	}
	errs := v.validate(v.root, inst, "$")
	return len(errs) == 0, errs
}

// beyondSchema are bad documents the parser refuses for reasons JSON Schema
// cannot express; the test checks that the schema does accept them, so
// this list stays honest.
var beyondSchema = map[string]string{
	"top-level twice":             "duplicate keys vanish when JSON is decoded",
	"field twice":                 "duplicate keys vanish when JSON is decoded",
	"duplicate ids":               "uniqueness of a property across items",
	"duration overflow":           "the magnitude of a duration string",
	"duration over a year":        "the magnitude of a duration string",
	"adaptive band inverted":      "a comparison between two fields",
	"alerting resolve above fire": "a comparison between two fields",
	"alerting window too short":   "the magnitude of a duration string",
	"adaptive min above max":      "a comparison between two fields",
	"reserve adds up to 1":        "a sum of fields",
	"resource invalid UTF-8":      "the encoding of a string",
	"ip list bad values":          "IP address syntax, and uniqueness within an array",
	"resource lone surrogate":     "the encoding of a string",
}

func TestSchemaAgreesWithParser(t *testing.T) {
	v := loadSchema(t)
	var good [][]byte
	files, _ := filepath.Glob("../examples/rules/*.json")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		good = append(good, data)
	}
	good = append(good, []byte(designDoc), []byte(`{"rules": []}`))
	for _, data := range append([][]byte(nil), good...) {
		if doc, err := Parse(data); err == nil {
			good = append(good, doc.Format())
		}
	}
	for _, data := range good {
		if _, err := Parse(data); err != nil {
			t.Errorf("parser refuses a good document: %v", err)
		}
		if ok, errs := v.accepts(data); !ok {
			t.Errorf("schema refuses a document the parser accepts:\n%s\n%s", strings.Join(errs, "\n"), data)
		}
	}
	for _, tc := range badDocs {
		ok, _ := v.accepts([]byte(tc.doc))
		if why, beyond := beyondSchema[tc.name]; beyond {
			if !ok {
				t.Errorf("%s: listed as beyond the schema (%s), but the schema refuses it", tc.name, why)
			}
			continue
		}
		if ok {
			t.Errorf("%s: schema accepts a document the parser refuses: %s", tc.name, tc.doc)
		}
	}
}

// TestSchemaDurationPattern checks the schema's duration pattern against
// the parser on strings near its edges (magnitude aside: "99999999999h"
// matches the pattern, and only the parser knows it overflows).
func TestSchemaDurationPattern(t *testing.T) {
	v := loadSchema(t)
	def := v.root["$defs"].(map[string]any)["duration"]
	for _, s := range []string{"1s", "1.5h", "1h30m", "0", "0s", "+1s", "+0", "-1s", "-0s", "1", "1x", "", ".5s",
		"1.s", "1e3s", "1µs", "1μs", "1us", "5ns", "1 s", " 1s", "1s ", "1S", "2562047h", "1h-1m", "..5s", "1..5s"} {
		o := &object{p: newProblems(), index: -1}
		_, parser := o.duration("d", &node{kind: kindString, text: s})
		schema := len(v.validate(def, s, "$")) == 0
		if parser != schema {
			t.Errorf("%q: parser accepts = %v, schema accepts = %v", s, parser, schema)
		}
	}
}
