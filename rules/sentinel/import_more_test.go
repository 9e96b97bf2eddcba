package sentinel

import (
	"strings"
	"testing"

	"github.com/flowgate/flowgate/flow"
)

// importOne imports one file and fails the test on an error.
func mustImport(t *testing.T, data string, opts Options) *Result {
	t.Helper()
	res, err := Import([]File{{Name: "f.json", Data: []byte(data)}}, opts)
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return res
}

// TestImportClusterParam: a cluster-mode QPS parameter rule is decided per
// value by the token server; a thread-count one stays local, as in Java.
func TestImportClusterParam(t *testing.T) {
	res := mustImport(t, `[{"resource":"r","paramIdx":0,"count":10,"clusterMode":true,"durationInSec":2,
		"clusterConfig":{"thresholdType":1,"fallbackToLocalWhenFail":false},
		"paramFlowItemList":[{"object":"vip","classType":"java.lang.String","count":30}]},
		{"resource":"r","paramIdx":1,"grade":0,"count":3,"clusterMode":true}]`, Options{})
	rep := res.Reports[0]
	if rep.Verdict != Approx || !strings.Contains(rep.Note, "durationInSec not used") {
		t.Errorf("cluster QPS: %s, want approx naming durationInSec", rep)
	}
	rs := res.Document.Rules()
	if len(rs) != 2 {
		t.Fatalf("got %d rules, want 2", len(rs))
	}
	r := rs[0]
	if r.Level != flow.LevelParam || r.Algorithm != flow.AlgoSlidingWindow || r.Cluster == nil ||
		r.Cluster.Threshold != "global" || r.Cluster.Fallback != "allow" || r.Items["vip"] != 30 {
		t.Errorf("cluster QPS: got %+v", r)
	}
	if rep, r := res.Reports[1], rs[1]; rep.Verdict != Exact || r.Cluster != nil || r.Algorithm != flow.AlgoConcurrency {
		t.Errorf("cluster thread count: %s, %v %v; want exact local concurrency", rep, r.Algorithm, r.Cluster)
	}
}

// TestImportEmpty: input without a rule is an error unless AllowEmpty: an
// empty document would remove every limit.
func TestImportEmpty(t *testing.T) {
	for _, data := range []string{`[]`, ``, `{"success":true,"code":0,"msg":"success","data":[]}`} {
		_, err := Import([]File{{Name: "e.json", Data: []byte(data)}}, Options{})
		if err == nil || !strings.Contains(err.Error(), "e.json: no rules") {
			t.Errorf("%q: got %v, want a no-rules error", data, err)
		}
		res, err := Import([]File{{Name: "e.json", Data: []byte(data)}}, Options{AllowEmpty: true})
		if err != nil || len(res.Document.Rules()) != 0 {
			t.Errorf("%q with AllowEmpty: %v", data, err)
		}
	}
	// One empty file beside rules is fine.
	_, err := Import([]File{{Name: "e.json", Data: []byte(`[]`)}, {Name: "f.json", Data: []byte(`[{"resource":"r","threshold":1}]`)}}, Options{})
	if err != nil {
		t.Errorf("an empty file beside rules: %v", err)
	}
}

// TestImportDashboardReply: the dashboard API's reply is read as its data.
func TestImportDashboardReply(t *testing.T) {
	res := mustImport(t, `{"success":true,"code":0,"msg":"success","data":[{"resource":"r","grade":1,"count":5}]}`, Options{})
	if rep := res.Reports[0]; rep.Kind != "java flow" || rep.Index != 0 || rep.Verdict != Exact {
		t.Errorf("got %s", rep)
	}
}

// TestImportStableIDs: ids come from each source element, so fixing a
// refused rule (or dropping one) renames none of the others.
func TestImportStableIDs(t *testing.T) {
	ids := func(data string) []string {
		var out []string
		for _, r := range mustImport(t, data, Options{}).Reports {
			out = append(out, strings.Join(r.IDs, ","))
		}
		return out
	}
	refused := `[{"resource":"a","grade":1,"count":5,"strategy":2,"refResource":"x"},
		{"resource":"a","grade":1,"count":6},{"resource":"b","grade":1,"count":7}]`
	fixed := strings.Replace(refused, `"strategy":2`, `"strategy":0`, 1)
	got, want := ids(refused), []string{"", "sentinel-flow/a#2", "sentinel-flow/b"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("refused first: ids %q, want %q", got, want)
	}
	got, want = ids(fixed), []string{"sentinel-flow/a", "sentinel-flow/a#2", "sentinel-flow/b"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("fixed: ids %q, want %q", got, want)
	}
	// A source id is kept; a repeated one falls back to the derived id.
	got = ids(`[{"id":"x","resource":"r","threshold":1},{"id":"x","resource":"r","threshold":2}]`)
	if got[0] != "x" || got[1] != "sentinel-flow/r#2" {
		t.Errorf("source ids: %q", got)
	}
}

// TestImportRenameHTTP: with RenameHTTP, "METHOD:/path" becomes flowhttp's
// "METHOD /path" (refResource too); every route-like name left is warned.
func TestImportRenameHTTP(t *testing.T) {
	data := `[{"resource":"GET:/api/orders","grade":1,"count":5},
		{"resource":"POST:/pay","grade":1,"count":5,"strategy":1,"refResource":"GET:/api/orders"},
		{"resource":"/plain","grade":1,"count":5},{"resource":"orders","grade":1,"count":5},
		{"resource":"FETCH:/x","grade":1,"count":5}]`
	res := mustImport(t, data, Options{RenameHTTP: true})
	rs := res.Document.Rules()
	if rs[0].Resource != "GET /api/orders" || rs[1].Resource != "POST /pay" || rs[1].RefResource != "GET /api/orders" {
		t.Errorf("renamed: %q, %q ref %q", rs[0].Resource, rs[1].Resource, rs[1].RefResource)
	}
	if rs[2].Resource != "/plain" || rs[3].Resource != "orders" || rs[4].Resource != "FETCH:/x" {
		t.Errorf("kept: %q %q %q", rs[2].Resource, rs[3].Resource, rs[4].Resource)
	}
	if rep := res.Reports[0]; rep.Renamed != "GET /api/orders" || len(rep.Warnings) != 0 ||
		!strings.Contains(rep.String(), `"GET:/api/orders" as "GET /api/orders": exact`) {
		t.Errorf("report: %s", rep)
	}
	if rep := res.Reports[2]; len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "HTTP path") {
		t.Errorf("a path without a method: %s", rep)
	}
	if rep := res.Reports[3]; len(rep.Warnings) != 0 || rep.Renamed != "" {
		t.Errorf("a plain name: %s", rep)
	}
	// Without the option names are kept and each route-like one warned.
	res = mustImport(t, data, Options{})
	if r := res.Document.Rules()[0]; r.Resource != "GET:/api/orders" {
		t.Errorf("kept without the option: %q", r.Resource)
	}
	// [1]: its resource and its refResource.
	for i, n := range []int{1, 2, 1, 0, 0} {
		if got := len(res.Reports[i].Warnings); got != n {
			t.Errorf("[%d] %d warnings, want %d: %s", i, got, n, res.Reports[i])
		}
	}
	if w := res.Reports[0].Warnings; len(w) == 0 || !strings.Contains(w[0], `flowhttp names that route "GET /api/orders" (--rename-http renames it)`) {
		t.Errorf("warning: %q", w)
	}
}
