package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

const doc = `{"rules": [
  {"id": "per-user", "resource": "GET /orders", "level": "user", "algorithm": "fixed_window", "limit": 2, "window": "1m"},
  {"id": "all", "resource": "GET /orders", "algorithm": "token_bucket", "limit": 1000}
]}`

// newServer mounts the handler as the README says, under /flowgate/.
func newServer(t *testing.T, opts ...admin.Option) (*flow.Engine, *httptest.Server) {
	t.Helper()
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	d, err := rules.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.LoadRules(d.Rules()); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/flowgate/", http.StripPrefix("/flowgate", admin.New(eng, opts...)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return eng, srv
}

func call(t *testing.T, method, u, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if method == http.MethodPost || method == http.MethodPut {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

func TestReadEndpoints(t *testing.T) {
	eng, srv := newServer(t)
	for range 5 {
		if p, err := eng.Entry("GET /orders", flow.WithUser("mallory")); err == nil {
			p.Exit()
		}
	}
	code, b := call(t, "GET", srv.URL+"/flowgate/api/rules", "", "")
	rr := decode[admin.RulesResponse](t, b)
	d, _ := rules.Parse([]byte(doc))
	if code != 200 || rr.Version != d.Version() || rr.Origin != "engine" {
		t.Fatalf("rules: %d version %s origin %s, want 200, %s, engine", code, rr.Version, rr.Origin, d.Version())
	}

	code, b = call(t, "GET", srv.URL+"/flowgate/api/snapshot", "", "")
	snap := decode[admin.Snapshot](t, b)
	if code != 200 || len(snap.Resources) != 1 {
		t.Fatalf("snapshot: %d %s", code, b)
	}
	r := snap.Resources[0]
	if r.Passed != 2 || r.Blocked["user"] != 3 || r.Completed != 2 {
		t.Fatalf("resource: got passed %d blocked %v completed %d, want 2, user:3, 2", r.Passed, r.Blocked, r.Completed)
	}
	if snap.Rules[0].ID != "per-user" || snap.Rules[0].Blocked != 3 || snap.Rules[0].Keys != 1 {
		t.Fatalf("rule stats: got %+v, want per-user with 3 blocked, 1 key", snap.Rules[0])
	}

	code, b = call(t, "GET", srv.URL+"/flowgate/api/topkeys?n=5", "", "")
	top := decode[admin.TopKeysResponse](t, b)
	if code != 200 || len(top.Rules) != 1 || len(top.Rules[0].Keys) != 1 || top.Rules[0].Keys[0] != (admin.KeyCount{Key: "mallory", Refused: 3}) {
		t.Fatalf("topkeys: %d %s", code, b)
	}
	if code, _ := call(t, "GET", srv.URL+"/flowgate/api/topkeys?n=0", "", ""); code != 400 {
		t.Errorf("topkeys?n=0: got %d, want 400", code)
	}

	code, b = call(t, "GET", srv.URL+"/flowgate/api/key?rule=per-user&key=mallory", "", "")
	ks := decode[admin.KeyState](t, b)
	if code != 200 || !ks.Tracked || ks.Remaining != 0 || ks.Refused != 3 {
		t.Fatalf("key: %d %s", code, b)
	}
	for q, want := range map[string]int{"rule=nope&key=x": 404, "rule=all&key=x": 400, "rule=per-user": 400} {
		if code, b := call(t, "GET", srv.URL+"/flowgate/api/key?"+q, "", ""); code != want {
			t.Errorf("key?%s: got %d %s, want %d", q, code, b, want)
		}
	}

	code, b = call(t, "GET", srv.URL+"/flowgate/", "", "")
	if code != 200 || !strings.Contains(string(b), "<title>flowgate console</title>") {
		t.Fatalf("console: %d", code)
	}
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(srv.URL + "/flowgate")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	// The page's API links are relative: it must be reached with the slash.
	if loc, _ := res.Location(); res.StatusCode/100 != 3 || loc == nil || loc.Path != "/flowgate/" {
		t.Errorf("/flowgate: got %d to %v, want a redirect to /flowgate/", res.StatusCode, loc)
	}
}

func TestWritesOffByDefault(t *testing.T) {
	eng, srv := newServer(t)
	before := eng.Rules()
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/flowgate/api/rules", `{"rules": []}`},
		{"POST", "/flowgate/api/key/reset", `{"rule": "per-user", "key": "a"}`},
	} {
		code, b := call(t, c.method, srv.URL+c.path, "anything", c.body)
		if code != 403 || !strings.Contains(string(b), "writes are disabled") {
			t.Errorf("%s %s: got %d %s, want 403 writes are disabled", c.method, c.path, code, b)
		}
	}
	if len(eng.Rules()) != len(before) {
		t.Fatal("a refused write changed the rules")
	}
}

func TestWriteTokenRefusals(t *testing.T) {
	eng, srv := newServer(t, admin.WithWriteToken("s3cret"))
	for _, tok := range []string{"", "wrong", "s3cret2", "s3cre"} {
		code, b := call(t, "PUT", srv.URL+"/flowgate/api/rules", tok, `{"rules": []}`)
		if code != 401 || !strings.Contains(string(b), "bearer token") {
			t.Errorf("token %q: got %d %s, want 401", tok, code, b)
		}
	}
	if len(eng.Rules()) != 2 {
		t.Fatal("a refused write changed the rules")
	}
	// GET needs no token, a wrong method is not a write.
	if code, _ := call(t, "DELETE", srv.URL+"/flowgate/api/rules", "s3cret", ""); code != 405 {
		t.Errorf("DELETE: got %d, want 405", code)
	}
}

func TestReadToken(t *testing.T) {
	_, srv := newServer(t, admin.WithReadToken("look"), admin.WithWriteToken("touch"))
	for tok, want := range map[string]int{"": 401, "nope": 401, "look": 200, "touch": 200} {
		if code, _ := call(t, "GET", srv.URL+"/flowgate/api/snapshot", tok, ""); code != want {
			t.Errorf("read with %q: got %d, want %d", tok, code, want)
		}
	}
	if code, _ := call(t, "POST", srv.URL+"/flowgate/api/key/reset", "look", `{"rule": "per-user", "key": "a"}`); code != 401 {
		t.Errorf("write with the read token: got %d, want 401", code)
	}
}

// TestPutRulesSameMessagesAsValidate: a refused document gets every
// problem in the words `flowgate validate` prints, and nothing changes.
func TestPutRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.json")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, srv := newServer(t, admin.WithWriteToken("s3cret"), admin.WithWriteBack(admin.WriteFile(path)))
	bad := `{"rules": [
		{"id": "orders", "resource": "r", "algorithm": "token_bucket", "limit": 0, "window": "10x"},
		{"id": "orders", "resource": "s", "algorithm": "gcra", "limit": 1}]}`
	code, b := call(t, "PUT", srv.URL+"/flowgate/api/rules", "s3cret", bad)
	ae := decode[struct {
		Error    string   `json:"error"`
		Problems []string `json:"problems"`
	}](t, b)
	_, perr := rules.Parse([]byte(bad))
	var want []string
	for _, p := range rules.Problems(perr) {
		want = append(want, p.Error())
	}
	if code != 422 || strings.Join(ae.Problems, "\n") != strings.Join(want, "\n") || len(want) < 3 {
		t.Fatalf("bad document: got %d %q, want 422 %q", code, ae.Problems, want)
	}
	if len(eng.Rules()) != 2 {
		t.Fatal("a refused document changed the rules")
	}

	good := `{"rules": [{"id": "only", "resource": "r", "algorithm": "fixed_window", "limit": 3}]}`
	code, b = call(t, "PUT", srv.URL+"/flowgate/api/rules", "s3cret", good)
	pr := decode[admin.PutRulesResponse](t, b)
	gd, _ := rules.Parse([]byte(good))
	if code != 200 || pr.Version != gd.Version() || !pr.WrittenBack || pr.Rules != 1 {
		t.Fatalf("good document: %d %s", code, b)
	}
	if rs := eng.Rules(); len(rs) != 1 || rs[0].ID != "only" {
		t.Fatalf("rules in force: %+v", rs)
	}
	if got, _ := os.ReadFile(path); string(got) != good {
		t.Fatalf("written back: %q, want the document as sent", got)
	}
	_, b = call(t, "GET", srv.URL+"/flowgate/api/rules", "", "")
	if rr := decode[admin.RulesResponse](t, b); rr.Origin != "api" || rr.Version != gd.Version() {
		t.Fatalf("after PUT: origin %s version %s", rr.Origin, rr.Version)
	}
}

func TestResetKey(t *testing.T) {
	eng, srv := newServer(t, admin.WithWriteToken("s3cret"))
	for range 3 {
		eng.Entry("GET /orders", flow.WithUser("alice"))
	}
	if _, err := eng.Entry("GET /orders", flow.WithUser("alice")); err == nil {
		t.Fatal("alice passed a third time")
	}
	code, b := call(t, "POST", srv.URL+"/flowgate/api/key/reset", "s3cret", `{"rule": "per-user", "key": "alice"}`)
	if rr := decode[admin.ResetResponse](t, b); code != 200 || !rr.Held {
		t.Fatalf("reset: %d %s", code, b)
	}
	if _, err := eng.Entry("GET /orders", flow.WithUser("alice")); err != nil {
		t.Fatalf("after reset alice is refused: %v", err)
	}
	if code, _ := call(t, "POST", srv.URL+"/flowgate/api/key/reset?rule=nope&key=a", "s3cret", ""); code != 404 {
		t.Errorf("reset of an unknown rule: got %d, want 404", code)
	}
}

func TestSnapshotAdaptiveConcurrency(t *testing.T) {
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	d, err := rules.Parse([]byte(`{"rules": [{"id": "auto", "resource": "r", "algorithm": "adaptive_concurrency", "initialLimit": 20, "minLimit": 1, "maxLimit": 100}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.LoadRules(d.Rules()); err != nil {
		t.Fatal(err)
	}
	p, err := eng.Entry("r")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Exit()
	srv := httptest.NewServer(admin.New(eng))
	defer srv.Close()
	_, b := call(t, "GET", srv.URL+"/api/snapshot", "", "")
	ac := decode[admin.Snapshot](t, b).Rules[0].AdaptiveConcurrency
	if ac == nil || ac.Limit != 20 || ac.InFlight != 1 {
		t.Fatalf("adaptiveConcurrency: got %+v, want limit 20 with 1 in flight (%s)", ac, b)
	}
}
