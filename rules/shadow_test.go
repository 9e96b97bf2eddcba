package rules

import (
	"slices"
	"strings"
	"testing"
)

func TestParseShadow(t *testing.T) {
	doc, err := Parse([]byte(`{"rules": [
		{"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": 10, "shadow": true},
		{"id": "b", "resource": "r", "algorithm": "circuit_breaker", "strategy": "error_count", "threshold": 3, "openFor": "5s", "shadow": false},
		{"id": "c", "resource": "r", "algorithm": "concurrency", "limit": 2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := []bool{}
	for _, r := range doc.Rules() {
		got = append(got, r.Shadow)
	}
	if want := []bool{true, false, false}; !slices.Equal(got, want) {
		t.Errorf("Shadow = %v, want %v", got, want)
	}
	checkRoundTrip(t, doc)
	// fmt writes shadow only when true.
	out := string(doc.Format())
	if strings.Count(out, `"shadow": true`) != 1 || strings.Contains(out, `"shadow": false`) {
		t.Errorf("formatted:\n%s", out)
	}
}

func TestDocumentShadowAppliesToEveryRule(t *testing.T) {
	doc, err := LoadFile("../examples/rules/shadow.json")
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Shadow {
		t.Fatal("Document.Shadow false")
	}
	for _, r := range doc.Rules() {
		if !r.Shadow {
			t.Errorf("rule %s: Shadow false under a shadow document", r.ID)
		}
	}
	checkRoundTrip(t, doc)
	out := string(doc.Format())
	if !strings.HasPrefix(out, "{\n  \"shadow\": true,\n  \"rules\"") || strings.Count(out, `"shadow"`) != 1 {
		t.Errorf("formatted: the document-level shadow should stay one field at the top:\n%s", out)
	}
}

// Flipping the document's shadow off is a change of every rule it moves.
func TestDiffShowsShadowFlip(t *testing.T) {
	cur, err := Parse([]byte(`{"shadow": true, "rules": [
		{"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": 10},
		{"id": "b", "resource": "r", "algorithm": "fixed_window", "limit": 10, "shadow": true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	next, err := Parse([]byte(`{"rules": [
		{"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": 10},
		{"id": "b", "resource": "r", "algorithm": "fixed_window", "limit": 10, "shadow": true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range Diff(cur, next) {
		got = append(got, c.String())
	}
	if want := "~ a: shadow true -> (none)"; len(got) != 1 || got[0] != want {
		t.Errorf("Diff = %q, want [%q]", got, want)
	}
}
