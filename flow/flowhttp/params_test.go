package flowhttp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

// The README's tenant limits with exceptions and an IP deny list, loaded as
// a user would, through rules.Parse.
const tenantRules = `{"rules": [
  {"id": "blocked-nets", "resource": "GET /t/{tenant}/orders", "level": "ip", "algorithm": "deny",
   "values": ["203.0.113.0/24", "2001:db8:bad::/48"]},
  {"id": "per-tenant", "resource": "GET /t/{tenant}/orders", "level": "param", "param": "tenant",
   "algorithm": "fixed_window", "limit": 2, "window": "1m", "items": {"acme": 4}},
  {"id": "per-key", "resource": "GET /t/{tenant}/orders", "level": "param", "param": "apikey",
   "algorithm": "fixed_window", "limit": 3, "window": "1m"},
  {"id": "plans", "resource": "GET /t/{tenant}/orders", "level": "param", "param": "plan",
   "algorithm": "deny", "values": ["banned"]},
  {"id": "regions", "resource": "GET /t/{tenant}/orders", "level": "param", "param": "region",
   "algorithm": "deny", "values": ["xx"]}
]}`

func tenantMux(t *testing.T) *http.ServeMux {
	t.Helper()
	doc, err := rules.Parse([]byte(tenantRules))
	if err != nil {
		t.Fatal(err)
	}
	eng := newEngine(t, clock.NewFake(epoch), doc.Rules()...)
	mux := http.NewServeMux()
	mux.Handle("GET /t/{tenant}/orders", Middleware(eng, WithParams(
		ParamFromPath("tenant", "tenant"),
		ParamFromHeader("apikey", "X-API-Key"),
		ParamFromCookie("plan", "plan"),
		ParamFromQuery("region", "region"),
	), WithParamMaxLen(8))(&okHandler{}))
	return mux
}

func TestParamsFromPathHeaderCookieQuery(t *testing.T) {
	mux := tenantMux(t)
	codes := func(n int, target, remote string, h http.Header) string {
		var out []string
		for range n {
			out = append(out, http.StatusText(serve(mux, "GET", target, remote, h).Code))
		}
		return strings.Join(out, ",")
	}
	// Tenants from the path: the default limit and acme's exception.
	if got, want := codes(3, "/t/globex/orders", "192.0.2.1:1", nil), "OK,OK,Too Many Requests"; got != want {
		t.Errorf("globex: %s, want %s", got, want)
	}
	if got, want := codes(5, "/t/acme/orders", "192.0.2.1:1", nil), "OK,OK,OK,OK,Too Many Requests"; got != want {
		t.Errorf("acme: %s, want %s", got, want)
	}
	// An API key from the header, capped at 8 bytes: the two keys below
	// share their first 8 and so one limit.
	key := func(k string) http.Header { return http.Header{"X-Api-Key": {k}} }
	serve(mux, "GET", "/t/a/orders", "192.0.2.1:1", key("k-123456-one"))
	serve(mux, "GET", "/t/b/orders", "192.0.2.1:1", key("k-123456-two"))
	serve(mux, "GET", "/t/c/orders", "192.0.2.1:1", key("k-123456-three"))
	if w := serve(mux, "GET", "/t/d/orders", "192.0.2.1:1", key("k-123456-four")); w.Code != http.StatusTooManyRequests {
		t.Errorf("fourth call on one capped key: %d, want 429", w.Code)
	}
	// Cookie and query lists answer 403.
	if w := serve(mux, "GET", "/t/e/orders", "192.0.2.1:1", http.Header{"Cookie": {"plan=banned"}}); w.Code != http.StatusForbidden {
		t.Errorf("banned plan cookie: %d, want 403", w.Code)
	}
	if w := serve(mux, "GET", "/t/f/orders?region=xx", "192.0.2.1:1", nil); w.Code != http.StatusForbidden {
		t.Errorf("region xx: %d, want 403", w.Code)
	}
	if w := serve(mux, "GET", "/t/g/orders?region=fr", "192.0.2.1:1", nil); w.Code != http.StatusOK {
		t.Errorf("region fr: %d, want 200", w.Code)
	}
}

func TestDenyListAnswers403(t *testing.T) {
	mux := tenantMux(t)
	for _, remote := range []string{"203.0.113.9:1", "[2001:db8:bad::1]:1"} {
		w := serve(mux, "GET", "/t/x/orders", remote, nil)
		if w.Code != http.StatusForbidden {
			t.Fatalf("%s: %d, want 403", remote, w.Code)
		}
		var p Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		want := Problem{Type: "about:blank", Title: "Forbidden", Status: 403, Level: "ip", Rule: "blocked-nets",
			Detail: `on deny list at the ip level by rule "blocked-nets"`}
		if p != want {
			t.Fatalf("problem %+v, want %+v", p, want)
		}
		wantHeaders(t, w.Header(), map[string]string{"Retry-After": ""})
	}
	if w := serve(mux, "GET", "/t/x/orders", "198.51.100.1:1", nil); w.Code != http.StatusOK {
		t.Fatalf("outside the list: %d", w.Code)
	}
}

// Reading params adds no allocation to the middleware's own.
func TestParamsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation count: not under the race detector")
	}
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "p", Resource: "GET /t/{tenant}", Level: flow.LevelParam,
		Param: "tenant", Algorithm: flow.AlgoTokenBucket, Limit: 1e9})
	allocs := func(params ...Param) float64 {
		h := Middleware(eng, WithParams(params...), WithIdentityContext(false))(trivial)
		r, _ := http.NewRequest("GET", "/t/acme", nil)
		r.RemoteAddr = "192.0.2.1:1"
		r.Header.Set("X-Key", "k1")
		r.Pattern = "GET /t/{tenant}"
		r.SetPathValue("tenant", "acme")
		w := &discardWriter{h: http.Header{}}
		h.ServeHTTP(w, r)
		return testing.AllocsPerRun(200, func() { h.ServeHTTP(w, r) })
	}
	base := allocs()
	if n := allocs(ParamFromPath("tenant", "tenant"), ParamFromHeader("k", "X-Key"), ParamFromCookie("c", "c")); n != base {
		t.Fatalf("with params: %v allocs per request, without: %v", n, base)
	}
}
