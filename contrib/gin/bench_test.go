package flowgin_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	flowgin "github.com/flowgate/flowgate/contrib/gin"
	"github.com/flowgate/flowgate/flow"
)

// BenchmarkGin is one passing request through a gin router, without and
// with the middleware (a rule that never refuses), in one run.
func BenchmarkGin(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	eng := flow.NewEngine()
	if err := eng.LoadRules([]flow.Rule{{ID: "all", Resource: "GET /orders/:id", Algorithm: flow.AlgoConcurrency, Limit: 1e6}}); err != nil {
		b.Fatal(err)
	}
	for _, mw := range []bool{false, true} {
		name := "plain"
		r := gin.New()
		if mw {
			name = "flowgin"
			r.Use(flowgin.Middleware(eng))
		}
		r.GET("/orders/:id", func(c *gin.Context) { c.Status(http.StatusNoContent) })
		b.Run(name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/orders/7", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				r.ServeHTTP(w, req)
			}
		})
	}
}
