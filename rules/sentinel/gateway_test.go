package sentinel

import (
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// TestImportGatewayFlow: a GatewayFlowRule is imported as the parameter
// rule Java makes of it: intervalSec is the window, burst the extra
// tokens, paramItem the level.
func TestImportGatewayFlow(t *testing.T) {
	res := mustImport(t, `[
		{"resource":"orders_route","resourceMode":0,"count":100,"intervalSec":60,"burst":5},
		{"resource":"orders_route","count":10,"interval":2,"intervalUnit":1,"paramItem":{"parseStrategy":0}},
		{"resource":"orders_route","count":10,"controlBehavior":2,"maxQueueingTimeoutMs":200,"paramItem":{"parseStrategy":2,"fieldName":"X-Tenant"}},
		{"resource":"orders_route","count":10,"paramItem":{"parseStrategy":3,"fieldName":"q","pattern":"vip","matchStrategy":0}},
		{"resource":"orders_route","count":10,"paramItem":{"parseStrategy":1}},
		{"resource":"my_api","resourceMode":1,"grade":0,"count":3}]`, Options{})
	rs := res.Document.Rules()
	if len(rs) != 4 {
		t.Fatalf("got %d rules, want 4: %v", len(rs), res.Reports)
	}
	if r := rs[0]; r.Level != flow.LevelGlobal || r.Algorithm != flow.AlgoSentinelHotspot || r.Window != time.Minute || r.Limit != 100 || r.Burst != 5 {
		t.Errorf("per minute with burst: %+v", r)
	}
	if r := rs[1]; r.Level != flow.LevelIP || r.Window != 2*time.Minute || r.Limit != 10 {
		t.Errorf("client IP, interval 2 minutes: level %v window %v limit %v", r.Level, r.Window, r.Limit)
	}
	if r := rs[2]; r.Level != flow.LevelParam || r.Param != "X-Tenant" || r.MaxWait != 200*time.Millisecond {
		t.Errorf("header, throttled: level %v param %q maxWait %v", r.Level, r.Param, r.MaxWait)
	}
	if w := res.Reports[2].Warnings; len(w) != 2 || !strings.Contains(w[1], `flowhttp.ParamFromHeader("X-Tenant", "X-Tenant")`) {
		t.Errorf("header warning: %q", w)
	}
	for i, why := range map[int]string{3: "paramItem.pattern", 4: "parseStrategy 1"} {
		if rep := res.Reports[i]; rep.Verdict != Cannot || !strings.Contains(rep.Note, why) {
			t.Errorf("[%d]: %s, want cannot naming %s", i, rep, why)
		}
	}
	if r, rep := rs[3], res.Reports[5]; r.Algorithm != flow.AlgoConcurrency || !strings.Contains(rep.Warnings[0], "gateway API definition") {
		t.Errorf("thread count on an API: %v; %s", r.Algorithm, rep)
	}
	for _, rep := range res.Reports {
		if rep.Kind != "java gateway-flow" {
			t.Errorf("%s: kind %q, want java gateway-flow", rep, rep.Kind)
		}
	}
}

// TestImportGatewayInterval: a window of 0 or one beyond a Go duration is
// refused, not wrapped around.
func TestImportGatewayInterval(t *testing.T) {
	res := mustImport(t, `[{"resource":"a","count":1,"intervalSec":0},{"resource":"a","count":1,"interval":2147483647,"intervalUnit":3}]`, Options{})
	for i, why := range []string{"at least 1s", "longer than a Go duration"} {
		if rep := res.Reports[i]; rep.Verdict != Cannot || !strings.Contains(rep.Note, why) {
			t.Errorf("[%d]: %s, want cannot naming %q", i, rep, why)
		}
	}
}

// TestImportGatewayAPI: an ApiDefinition is refused with what to do.
func TestImportGatewayAPI(t *testing.T) {
	res := mustImport(t, `[{"apiName":"orders_api","predicateItems":[{"pattern":"/orders/**","matchStrategy":1},
		{"items":[{"pattern":"/cart","matchStrategy":0}]}]}]`, Options{})
	rep := res.Reports[0]
	if rep.Kind != "java gateway-api" || rep.Verdict != Cannot || rep.Resource != "orders_api" ||
		!strings.Contains(rep.Note, "/orders/**, /cart") || !strings.Contains(rep.Note, "flowhttp.WithResource") {
		t.Errorf("got %s", rep)
	}
	if len(res.Document.Rules()) != 0 {
		t.Errorf("an API definition wrote rules")
	}
}

// TestImportUnknownFields: a field no Sentinel rule of the kind has is
// reported by path and makes the rule approx; the dashboard's own fields
// are not unknown.
func TestImportUnknownFields(t *testing.T) {
	res := mustImport(t, `[
		{"id":7,"app":"shop","ip":"10.0.0.1","port":8719,"gmtCreate":1,"gmtModified":2,"resource":"r","grade":1,"count":5},
		{"resource":"r","grade":1,"count":5,"windowSec":60,"clusterMode":true,"clusterConfig":{"thresholdType":0,"shard":2}},
		{"app":"shop","extra":1,"rule":{"resource":"r","paramIdx":0,"count":5,"paramFlowItemList":[{"object":"a","count":1,"ttl":3}]}},
		{"resource":"r","threshold":5,"scope":"tenant"},
		{"resource":"r","grade":1,"count":5,"strategy":2,"refResource":"x","foo":1}]`, Options{})
	wantUnknown := [][]string{nil, {"clusterConfig.shard", "windowSec"}, {"extra", "rule.paramFlowItemList[0].ttl"}, {"scope"}, {"foo"}}
	for i, w := range wantUnknown {
		rep := res.Reports[i]
		if strings.Join(rep.Unknown, ",") != strings.Join(w, ",") {
			t.Errorf("[%d] unknown %q, want %q", i, rep.Unknown, w)
		}
		switch {
		case i == 0 && rep.Verdict != Exact:
			t.Errorf("[0] dashboard fields: %s, want exact", rep)
		case i > 0 && i < 4 && (rep.Verdict != Approx || !strings.Contains(rep.Note, "unknown field(s) "+strings.Join(w, ", "))):
			t.Errorf("[%d]: %s, want approx naming the fields", i, rep)
		case i == 4 && (rep.Verdict != Cannot || !strings.Contains(rep.Note, "unknown field(s) foo")):
			t.Errorf("[4]: %s, want cannot (and the unknown field listed)", rep)
		}
	}
}

// TestImportRegexResource: a Java rule whose resource is a regular
// expression has no counterpart.
func TestImportRegexResource(t *testing.T) {
	res := mustImport(t, `[{"resource":"GET:/orders/.*","regex":true,"grade":1,"count":5}]`, Options{})
	if rep := res.Reports[0]; rep.Verdict != Cannot || !strings.Contains(rep.Note, "regular expression") {
		t.Errorf("got %s", rep)
	}
}

// TestImportUnknownKindDialect: a rule matching no kind of either dialect
// names neither as its finding; a Java file's unknown kind is not "go".
func TestImportUnknownKindDialect(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`[{"resource":"r","grade":1,"count":1},{"name":"x"}]`, "j.json: [1]: cannot tell which Java Sentinel (as the file's rules before it) rule this is (fields: name)"},
		{`[{"resource":"r","threshold":1},{"name":"x"}]`, "j.json: [1]: cannot tell which sentinel-golang (as the file's rules before it) rule"},
		{`[{"name":"x"}]`, "j.json: [0]: cannot tell which Sentinel (Java or sentinel-golang) rule"},
	} {
		_, err := Import([]File{{Name: "j.json", Data: []byte(tc.data)}}, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.data, err, tc.want)
		}
	}
}
