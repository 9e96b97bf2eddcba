// Package flowgin guards gin routes with a flowgate engine: the same
// middleware, options and answers as flowhttp (resource = the route
// pattern, identity, 429/503 with rate-limit headers and a problem body),
// adapted to gin's handler chain.
//
//	r := gin.New()
//	r.Use(flowgin.Middleware(eng, flowhttp.WithUser(func(r *http.Request) string { return r.Header.Get("X-User") })))
//	r.GET("/orders/:id", ...) // resource "GET /orders/:id"
//
// It is a module of its own, so the core never depends on gin.
package flowgin

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/flow/flowhttp"
)

// Middleware returns gin middleware that enters eng (flow.Default() when
// nil) for each request, as flowhttp.Middleware(eng, opts...) does. The
// resource is "METHOD /route/:pattern" (gin's FullPath); a request that
// matched no route is named "METHOD /path" (flowhttp's default). A refused
// request is answered by flowhttp (WriteProblem unless
// flowhttp.WithBlockedHandler) and the rest of the chain is aborted; a
// handler that panics or answers 5xx is recorded as an error. Handlers read
// the identity with flowhttp.IdentityFrom(c.Request.Context()).
func Middleware(eng *flow.Engine, opts ...flowhttp.Option) gin.HandlerFunc {
	guarded := flowhttp.Middleware(eng, opts...)(http.HandlerFunc(runChain))
	return func(c *gin.Context) {
		if fp := c.FullPath(); fp != "" {
			// flowhttp names a resource by r.Pattern, which only
			// http.ServeMux sets; gin's route is the same thing.
			c.Request.Pattern = c.Request.Method + " " + fp
		}
		gw := &ginWriter{ResponseWriter: c.Writer, c: c}
		guarded.ServeHTTP(gw, c.Request)
		if !gw.entered {
			c.Abort() // refused: flowhttp has answered
		}
	}
}

// ginWriter carries the gin context through flowhttp to runChain, which
// finds it by unwrapping the writer it is given.
type ginWriter struct {
	gin.ResponseWriter
	c       *gin.Context
	entered bool
}

// WriteHeader drops a status already sent: runChain repeats the chain's
// final status so that flowhttp records a 5xx.
func (w *ginWriter) WriteHeader(code int) {
	if w.ResponseWriter.Written() {
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *ginWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// runChain is the guarded part: the rest of gin's chain, with the request
// flowhttp passes on (it carries the Identity).
func runChain(w http.ResponseWriter, r *http.Request) {
	gw := findGin(w)
	if gw == nil {
		http.Error(w, "flowgin: middleware misconfigured", http.StatusInternalServerError)
		return
	}
	gw.entered = true
	c := gw.c
	c.Request = r
	c.Next()
	if s := c.Writer.Status(); s >= 500 {
		w.WriteHeader(s) // seen by flowhttp's status recorder, dropped by ginWriter
	}
}

func findGin(w http.ResponseWriter) *ginWriter {
	for {
		switch x := w.(type) {
		case *ginWriter:
			return x
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}
