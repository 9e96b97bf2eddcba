package rules

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/flow"
)

// TestSchemaRuleFieldsAreTheTable: schema.json describes a rule with the
// fields of flow's table, no more and no fewer, each with a JSON type its
// kind reads; so a field added to the table and not to the schema fails.
func TestSchemaRuleFieldsAreTheTable(t *testing.T) {
	data, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs struct {
			Rule struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"rule"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	props := s.Defs.Rule.Properties
	var inSchema, inTable []string
	for k := range props {
		inSchema = append(inSchema, k)
	}
	want := map[flow.FieldKind]string{
		flow.KindString: "string", flow.KindEnum: "enum", flow.KindAmount: "number", flow.KindNumber: "number",
		flow.KindInt: "integer|count", flow.KindDuration: "uration", flow.KindBool: "boolean",
		flow.KindList: "array", flow.KindMap: "object", flow.KindObject: "object",
	}
	for _, f := range flow.RuleFields() {
		inTable = append(inTable, f.Name)
		p, ok := props[f.Name]
		if !ok {
			continue
		}
		delete(p, "description")
		desc, _ := json.Marshal(p)
		text := strings.ToLower(string(desc))
		found := false
		for _, w := range strings.Split(want[f.Kind], "|") {
			found = found || strings.Contains(text, w)
		}
		if !found {
			t.Errorf("schema's %s is %s, want a %s", f.Name, desc, want[f.Kind])
		}
	}
	sort.Strings(inSchema)
	sort.Strings(inTable)
	if strings.Join(inSchema, ",") != strings.Join(inTable, ",") {
		t.Errorf("schema.json's rule fields:\n %v\nflow's table:\n %v", inSchema, inTable)
	}
}

// TestAppendFloatIsJSON: Format writes numbers itself; they must read as
// encoding/json writes them, so Version does not change with the writer.
func TestAppendFloatIsJSON(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.5, 0.49999999, 1.5, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e15, 1e20, 1e21, 123456789.125, 3e300} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(appendFloat(nil, f)); got != string(want) {
			t.Errorf("appendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

// TestRuleFieldsFitReadBits: readRule keeps one bit per field in a uint64.
func TestRuleFieldsFitReadBits(t *testing.T) {
	if n := len(flow.RuleFields()); n > 64 {
		t.Fatalf("%d rule fields; readRule's read set holds 64", n)
	}
}
