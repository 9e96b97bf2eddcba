package rules

import (
	"strings"
	"testing"
)

// The adaptive section carries the idle-CPU boost, and a rule its
// boostLimit; both round-trip through Format and are checked with paths.
func TestBoostInDocument(t *testing.T) {
	doc, err := Parse([]byte(`{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 100,
		"adaptive": true, "boostLimit": 150}], "adaptive": {"boostFactor": 1.5, "boostBelow": 0.4}}`))
	if err != nil {
		t.Fatal(err)
	}
	if b := doc.Adaptive.Boost; b.Factor != 1.5 || b.Below != 0.4 || b.Above != 0.55 {
		t.Errorf("boost %+v, want factor 1.5, below 0.4, above 0.55 (halfway to bandLow)", b)
	}
	if got := doc.Rules()[0].BoostLimit; got != 150 {
		t.Errorf("boostLimit %v, want 150", got)
	}
	again, err := Parse(doc.Format())
	if err != nil || again.Adaptive.Boost != doc.Adaptive.Boost || again.Rules()[0].BoostLimit != 150 {
		t.Errorf("Format round trip: %v, %+v\n%s", err, again, doc.Format())
	}
	if off, err := Parse([]byte(`{"rules": [], "adaptive": {"cpuTarget": 0.8}}`)); err != nil || strings.Contains(string(off.Format()), "boost") {
		t.Errorf("the boost off writes no boost fields: %v\n%s", err, off.Format())
	}
	for doc, want := range map[string]string{
		`{"rules": [], "adaptive": {"boostFactor": 0.5}}`:                                                         "adaptive.boostFactor: must be 0 (off) or in (1, 10]",
		`{"rules": [], "adaptive": {"boostFactor": 2, "boostBelow": 0.8}}`:                                        "adaptive.boostBelow: must be below bandLow 0.7",
		`{"rules": [{"id": "a", "resource": "r", "algorithm": "token_bucket", "limit": 100, "boostLimit": 150}]}`: `rules[0] (id "a"): boostLimit: only with "adaptive": true`,
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", doc, err, want)
		}
	}
}
