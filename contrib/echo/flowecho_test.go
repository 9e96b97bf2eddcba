package flowecho_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/flowgate/flowgate/clock"
	flowecho "github.com/flowgate/flowgate/contrib/echo"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/flow/flowhttp"
)

func newServer(t *testing.T, rules ...flow.Rule) (*flow.Engine, *echo.Echo, *int) {
	t.Helper()
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	if err := eng.LoadRules(rules); err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.Use(middleware.Recover(), flowecho.Middleware(eng, flowhttp.WithUser(func(r *http.Request) string { return r.Header.Get("X-User") })))
	calls := new(int)
	e.GET("/orders/:id", func(c echo.Context) error {
		*calls++
		id, _ := flowhttp.IdentityFrom(c.Request().Context())
		return c.JSON(200, map[string]string{"id": c.Param("id"), "user": id.User, "ip": id.IP})
	})
	e.POST("/fail", func(c echo.Context) error { *calls++; return c.String(502, "upstream down") })
	e.POST("/error", func(c echo.Context) error { *calls++; return errors.New("db gone") })
	e.POST("/teapot", func(c echo.Context) error { *calls++; return echo.NewHTTPError(418, "no coffee") })
	e.POST("/panic", func(c echo.Context) error { *calls++; panic("boom") })
	return eng, e, calls
}

func do(h http.Handler, method, path, user string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = "192.0.2.1:1234"
	if user != "" {
		req.Header.Set("X-User", user)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestRoutePatternUserAnd429(t *testing.T) {
	eng, e, calls := newServer(t, flow.Rule{ID: "per-user", Resource: "GET /orders/:id", Level: flow.LevelUser,
		Algorithm: flow.AlgoFixedWindow, Limit: 2, Window: time.Minute})
	for i, id := range []string{"1", "2"} {
		w := do(e, "GET", "/orders/"+id, "alice")
		var body map[string]string
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != 200 || body["user"] != "alice" || body["ip"] != "192.0.2.1" || body["id"] != id {
			t.Fatalf("call %d: %d %s", i, w.Code, w.Body)
		}
	}
	w := do(e, "GET", "/orders/3", "alice")
	if w.Code != 429 || w.Header().Get("Retry-After") == "" || w.Header().Get("Ratelimit-Policy") != `"per-user";q=2;w=60` ||
		w.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("third call: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if *calls != 2 {
		t.Fatalf("handler ran %d times, want 2 (a refused request must not reach it)", *calls)
	}
	if w := do(e, "GET", "/orders/3", "bob"); w.Code != 200 {
		t.Fatalf("bob: %d, want 200", w.Code)
	}
	snap := eng.Snapshot()
	if len(snap.Resources) != 1 || snap.Resources[0].Resource != "GET /orders/:id" || snap.Resources[0].Passed != 3 || snap.Resources[0].Blocked[flow.LevelUser] != 1 {
		t.Fatalf("snapshot: %+v", snap.Resources)
	}
}

func TestErrorsRecorded(t *testing.T) {
	var rules []flow.Rule
	for _, p := range []string{"/fail", "/error", "/teapot", "/panic"} {
		rules = append(rules, flow.Rule{ID: p, Resource: "POST " + p, Algorithm: flow.AlgoConcurrency, Limit: 10})
	}
	eng, e, _ := newServer(t, rules...)
	for path, want := range map[string]int{"/fail": 502, "/error": 500, "/teapot": 418, "/panic": 500} {
		if w := do(e, "POST", path, ""); w.Code != want {
			t.Errorf("%s: got %d, want %d", path, w.Code, want)
		}
	}
	wantErr := map[string]uint64{"POST /fail": 1, "POST /error": 1, "POST /teapot": 0, "POST /panic": 1}
	for _, rs := range eng.Snapshot().Resources {
		if rs.Errors != wantErr[rs.Resource] || rs.Completed != 1 || rs.InFlight != 0 {
			t.Errorf("%s: errors %d completed %d in flight %d, want %d 1 0", rs.Resource, rs.Errors, rs.Completed, rs.InFlight, wantErr[rs.Resource])
		}
	}
}
