package rules

import (
	"testing"
)

func TestFromRulesSameVersionAsParse(t *testing.T) {
	doc, err := Parse([]byte(`{"rules":[{"id":"a","resource":"r","algorithm":"token_bucket","limit":5}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := FromRules(doc.Rules())
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != doc.Version() {
		t.Fatalf("version: got %s, want %s (the parsed document's)", got.Version(), doc.Version())
	}
	bad := doc.Rules()
	bad[0].Limit = -1
	if _, err := FromRules(bad); err == nil {
		t.Fatal("FromRules accepted a negative limit")
	}
}
