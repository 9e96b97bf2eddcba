package rules

import (
	"slices"
	"testing"
)

func mustParse(t *testing.T, doc string) *Document {
	t.Helper()
	d, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDiff(t *testing.T) {
	cur := mustParse(t, `{"rules": [
  {"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": 10},
  {"id": "b", "resource": "r", "algorithm": "token_bucket", "limit": 5},
  {"resource": "s", "algorithm": "concurrency", "limit": 3}
], "alerting": {"rejectionRatio": 0.3}}`)
	next := mustParse(t, `{"rules": [
  {"id": "c", "resource": "r", "algorithm": "sliding_log", "limit": 1},
  {"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": 20, "window": "1m"},
  {"resource": "s", "level": "global", "algorithm": "concurrency", "limit": 3}
], "adaptive": {"cpuTarget": 0.7}}`)
	var got []string
	for _, c := range Diff(cur, next) {
		got = append(got, c.String())
	}
	want := []string{
		"+ c",
		`~ a: limit 10 -> 20, window "1s" -> "1m"`,
		"- b",
		"+ adaptive",
		"- alerting",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Diff =\n%q\nwant\n%q", got, want)
	}
	if d := Diff(cur, mustParse(t, string(cur.Format()))); len(d) != 0 {
		t.Errorf("Diff of a document and its normalised form = %v, want none", d)
	}
	if d := Diff(nil, cur); len(d) != 4 || d[0].String() != "+ a" || d[2].String() != "+ s global concurrency" || d[3].String() != "+ alerting" {
		t.Errorf("Diff from nothing = %v, want every rule and the section added", d)
	}
}
