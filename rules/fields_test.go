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
