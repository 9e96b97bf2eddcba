package admin_test

import (
	"strings"
	"testing"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/rules"
)

// TestPutRulesBounded: a megabyte of bad rules is refused with
// rules.MaxProblems problems and a last one saying there are more; a body
// over rules.MaxDocumentBytes is refused unread; the rules in force stay.
func TestPutRulesBounded(t *testing.T) {
	eng, srv := newServer(t, admin.WithWriteToken("s3cret"))
	bad := `{"rules": [{}` + strings.Repeat(`,{}`, (1<<20)/3) + `]}`
	code, b := call(t, "PUT", srv.URL+"/flowgate/api/rules", "s3cret", bad)
	ae := decode[struct {
		Problems []string `json:"problems"`
	}](t, b)
	if code != 422 || len(ae.Problems) != rules.MaxProblems+1 || !strings.Contains(ae.Problems[rules.MaxProblems], "more than") {
		t.Errorf("1 MB of {}: %d with %d problems, want 422 with %d and a last one saying there are more",
			code, len(ae.Problems), rules.MaxProblems)
	}
	huge := strings.Repeat(" ", admin.MaxDocumentBytes) + doc
	if code, b := call(t, "PUT", srv.URL+"/flowgate/api/rules", "s3cret", huge); code != 413 {
		t.Errorf("a body over MaxDocumentBytes: %d %s, want 413", code, b)
	}
	if len(eng.Rules()) != 2 {
		t.Errorf("refused documents changed the rules: %+v", eng.Rules())
	}
}
