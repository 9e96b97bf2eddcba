package flow

import (
	"errors"
	"reflect"
	"testing"
)

// TestValidateRulesStructured: every problem is a *RuleError whose parts a
// caller reads without parsing the text, and whose text is what users have
// always seen.
func TestValidateRulesStructured(t *testing.T) {
	// An id that looks like a place and a field would fool a parser of the
	// text; the typed value keeps it whole.
	tricky := `x"): limit: ` + "\n"
	err := ValidateRules([]Rule{
		{ID: "ok", Resource: "r", Limit: 1},
		{ID: tricky, Resource: "r", Limit: 0, Window: -1},
		{Resource: "", Limit: 1},
		{ID: "ok", Resource: "r", Limit: 1},
	})
	var got []RuleError
	var texts []string
	for _, e := range unjoin(err) {
		var re *RuleError
		if !errors.As(e, &re) {
			t.Fatalf("%v (%T): want a *RuleError", e, e)
		}
		got = append(got, RuleError{Index: re.Index, ID: re.ID, Field: re.Field, Msg: re.Msg})
		texts = append(texts, e.Error())
	}
	want := []RuleError{
		{Index: 1, ID: tricky, Field: "limit", Msg: "must be > 0, not 0"},
		{Index: 1, ID: tricky, Field: "window", Msg: "must be >= 0, not -1ns"},
		{Index: 2, Field: "resource", Msg: "must not be empty or only white space"},
		{Index: 3, ID: "ok", Field: "id", Msg: "duplicate of rules[0]"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("problems:\n got %+v\nwant %+v", got, want)
	}
	wantText := []string{
		`rules[1] (id "x\"): limit: \n"): limit: must be > 0, not 0`,
		`rules[1] (id "x\"): limit: \n"): window: must be >= 0, not -1ns`,
		`rules[2]: resource: must not be empty or only white space`,
		`rules[3] (id "ok"): id: duplicate of rules[0]`,
	}
	if !reflect.DeepEqual(texts, wantText) {
		t.Fatalf("text:\n got %q\nwant %q", texts, wantText)
	}
	// Rule.Validate does not know the place: the text is "field: message".
	if err := (Rule{Resource: "r"}).Validate(); err == nil || err.Error() != "limit: must be > 0, not 0" {
		t.Fatalf("Rule.Validate = %v, want %q", err, "limit: must be > 0, not 0")
	}
}
