package flowecho_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	flowecho "github.com/flowgate/flowgate/contrib/echo"
	"github.com/flowgate/flowgate/flow"
)

// BenchmarkEcho is one passing request through echo, without and with the
// middleware (a rule that never refuses), in one run.
func BenchmarkEcho(b *testing.B) {
	eng := flow.NewEngine()
	if err := eng.LoadRules([]flow.Rule{{ID: "all", Resource: "GET /orders/:id", Algorithm: flow.AlgoConcurrency, Limit: 1e6}}); err != nil {
		b.Fatal(err)
	}
	for _, mw := range []bool{false, true} {
		name := "plain"
		e := echo.New()
		if mw {
			name = "flowecho"
			e.Use(flowecho.Middleware(eng))
		}
		e.GET("/orders/:id", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
		b.Run(name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/orders/7", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				e.ServeHTTP(w, req)
			}
		})
	}
}
