package flowgin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/flowgate/flowgate/clock"
	flowgin "github.com/flowgate/flowgate/contrib/gin"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/flow/flowhttp"
)

func newRouter(t *testing.T, rules ...flow.Rule) (*flow.Engine, *gin.Engine, *int) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	if err := eng.LoadRules(rules); err != nil {
		t.Fatal(err)
	}
	r := gin.New()
	r.Use(gin.RecoveryWithWriter(io.Discard), flowgin.Middleware(eng, flowhttp.WithUser(func(r *http.Request) string { return r.Header.Get("X-User") })))
	calls := new(int)
	r.GET("/orders/:id", func(c *gin.Context) {
		*calls++
		id, _ := flowhttp.IdentityFrom(c.Request.Context())
		c.JSON(200, gin.H{"id": c.Param("id"), "user": id.User, "ip": id.IP})
	})
	r.POST("/fail", func(c *gin.Context) { *calls++; c.String(502, "upstream down") })
	r.POST("/panic", func(c *gin.Context) { *calls++; panic("boom") })
	return eng, r, calls
}

func do(r http.Handler, method, path, user string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = "192.0.2.1:1234"
	if user != "" {
		req.Header.Set("X-User", user)
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w
}

func TestRoutePatternUserAnd429(t *testing.T) {
	eng, r, calls := newRouter(t, flow.Rule{ID: "per-user", Resource: "GET /orders/:id", Level: flow.LevelUser,
		Algorithm: flow.AlgoFixedWindow, Limit: 2, Window: time.Minute})
	for i, id := range []string{"1", "2"} {
		w := do(r, "GET", "/orders/"+id, "alice")
		var body map[string]string
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != 200 || body["user"] != "alice" || body["ip"] != "192.0.2.1" || body["id"] != id {
			t.Fatalf("call %d: %d %s", i, w.Code, w.Body)
		}
	}
	w := do(r, "GET", "/orders/3", "alice") // another id, the same route: one resource
	if w.Code != 429 || w.Header().Get("Retry-After") == "" || w.Header().Get("Ratelimit-Policy") != `"per-user";q=2;w=60` ||
		w.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("third call: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if *calls != 2 {
		t.Fatalf("handler ran %d times, want 2 (a refused request must not reach it)", *calls)
	}
	if w := do(r, "GET", "/orders/3", "bob"); w.Code != 200 {
		t.Fatalf("bob: %d, want 200 (limits are per user)", w.Code)
	}
	snap := eng.Snapshot()
	if len(snap.Resources) != 1 || snap.Resources[0].Resource != "GET /orders/:id" || snap.Resources[0].Passed != 3 || snap.Resources[0].Blocked[flow.LevelUser] != 1 {
		t.Fatalf("snapshot: %+v", snap.Resources)
	}
}

func TestErrorsRecorded(t *testing.T) {
	eng, r, _ := newRouter(t,
		flow.Rule{ID: "f", Resource: "POST /fail", Algorithm: flow.AlgoConcurrency, Limit: 10},
		flow.Rule{ID: "p", Resource: "POST /panic", Algorithm: flow.AlgoConcurrency, Limit: 10})
	if w := do(r, "POST", "/fail", ""); w.Code != 502 || w.Body.String() != "upstream down" {
		t.Fatalf("/fail: %d %q", w.Code, w.Body)
	}
	if w := do(r, "POST", "/panic", ""); w.Code != 500 {
		t.Fatalf("/panic: %d, want gin.Recovery's 500", w.Code)
	}
	for _, rs := range eng.Snapshot().Resources {
		if rs.Errors != 1 || rs.Completed != 1 || rs.InFlight != 0 {
			t.Errorf("%s: errors %d completed %d in flight %d, want 1 1 0", rs.Resource, rs.Errors, rs.Completed, rs.InFlight)
		}
	}
}

func TestUnmatchedRoute(t *testing.T) {
	eng, r, _ := newRouter(t, flow.Rule{ID: "all", Resource: "GET /nowhere", Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Minute})
	if w := do(r, "GET", "/nowhere", ""); w.Code != 404 {
		t.Fatalf("/nowhere: %d, want gin's 404", w.Code)
	}
	if w := do(r, "GET", "/nowhere", ""); w.Code != 429 {
		t.Fatalf("/nowhere again: %d, want 429", w.Code)
	}
	// gin runs global middleware for unmatched paths too; they are named
	// METHOD /path like flowhttp, so a rule can still cap them.
	if rs := eng.Snapshot().Resources; len(rs) != 1 || rs[0].Passed != 1 || rs[0].Blocked[flow.LevelGlobal] != 1 {
		t.Fatalf("snapshot: %+v", rs)
	}
}
