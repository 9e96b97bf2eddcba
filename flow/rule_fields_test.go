package flow

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRuleFieldsCoverRule: every exported field of Rule has exactly one row
// in the table of fields, whose pointer is that field, whose JSON name is
// the Go name in lower camel case, and whose kind fits its type. A field
// added to Rule without a row fails here, not in a document that loses it.
func TestRuleFieldsCoverRule(t *testing.T) {
	var r Rule
	rv := reflect.ValueOf(&r).Elem()
	rows := make(map[uintptr]RuleField)
	for _, f := range RuleFields() {
		p := reflect.ValueOf(f.Ptr(&r))
		if p.Kind() != reflect.Pointer {
			t.Fatalf("%s: Ptr returns %v, want a pointer", f.Name, p.Type())
		}
		if prev, dup := rows[p.Pointer()]; dup {
			t.Errorf("%s and %s point at the same field", prev.Name, f.Name)
		}
		rows[p.Pointer()] = f
	}
	exported := 0
	for i := 0; i < rv.NumField(); i++ {
		sf := rv.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		exported++
		f, ok := rows[rv.Field(i).Addr().Pointer()]
		if !ok {
			t.Errorf("Rule.%s has no row in the table of fields (rule_table.go)", sf.Name)
			continue
		}
		if !strings.EqualFold(f.Name, sf.Name) || f.Name[:1] != strings.ToLower(f.Name[:1]) {
			t.Errorf("Rule.%s is written %q, want its name in lower camel case", sf.Name, f.Name)
		}
		if want := kindsOf(sf.Type); !strings.Contains(want, "|"+kindName(f.Kind)+"|") {
			t.Errorf("Rule.%s (%v) has kind %s, want one of %s", sf.Name, sf.Type, kindName(f.Kind), want)
		}
	}
	if len(rows) != exported {
		t.Errorf("the table has %d rows, Rule %d exported fields", len(rows), exported)
	}
}

func kindName(k FieldKind) string {
	return [...]string{"string", "enum", "amount", "number", "int", "duration", "bool", "list", "map", "object"}[k]
}

// kindsOf lists the kinds a field of type t may have, "|a|b|".
func kindsOf(t reflect.Type) string {
	switch t {
	case reflect.TypeOf(time.Duration(0)):
		return "|duration|"
	case reflect.TypeOf(Level(0)), reflect.TypeOf(Algorithm(0)), reflect.TypeOf(BreakerStrategy(0)):
		return "|enum|"
	}
	switch t.Kind() {
	case reflect.String:
		return "|string|"
	case reflect.Float64:
		return "|amount|number|"
	case reflect.Int:
		return "|int|"
	case reflect.Bool:
		return "|bool|"
	case reflect.Slice:
		return "|list|"
	case reflect.Map:
		return "|map|"
	case reflect.Pointer:
		return "|object|"
	}
	return "|none|"
}

// TestRuleFieldsAgree: what the table says of each field holds of the
// rules built from it. Every field a valid rule holds is one it takes;
// WithDefaults fills a field with a default only where it is taken, and
// fills every field that has one on some algorithm.
func TestRuleFieldsAgree(t *testing.T) {
	filled := map[string]bool{}
	for _, a := range Algorithms() {
		for _, l := range Levels() {
			r := Rule{Resource: "r", Level: l, Algorithm: a}
			if limited.has(a) {
				r.Limit = 1 // a token bucket's burst defaults to it
			}
			r = r.WithDefaults()
			for _, f := range RuleFields() {
				if !f.IsZero(&r) && f.NotFor(&r) != "" {
					t.Errorf("%v/%v: WithDefaults set %s, which the rule does not take: %s", a, l, f.Name, f.NotFor(&r))
				}
				if !f.IsZero(&r) && f.HasDefault() {
					filled[f.Name] = true
				}
			}
		}
	}
	for _, f := range RuleFields() {
		if f.HasDefault() && !filled[f.Name] {
			t.Errorf("%s has a default that WithDefaults never fills", f.Name)
		}
	}
}
