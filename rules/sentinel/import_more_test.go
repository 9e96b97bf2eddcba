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
