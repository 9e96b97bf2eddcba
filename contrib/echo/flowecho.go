// Package flowecho guards echo routes with a flowgate engine: the same
// middleware, options and answers as flowhttp (resource = the route
// pattern, identity, 429/503 with rate-limit headers and a problem body),
// adapted to echo's handler chain.
//
//	e := echo.New()
//	e.Use(flowecho.Middleware(eng, flowhttp.WithUser(func(r *http.Request) string { return r.Header.Get("X-User") })))
//	e.GET("/orders/:id", ...) // resource "GET /orders/:id"
//
// It is a module of its own, so the core never depends on echo.
package flowecho

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/flow/flowhttp"
)

// Middleware returns echo middleware that enters eng (flow.Default() when
// nil) for each request, as flowhttp.Middleware(eng, opts...) does. The
// resource is "METHOD /route/:pattern" (echo's c.Path()). A refused request
// is answered by flowhttp (WriteProblem unless flowhttp.WithBlockedHandler)
// and the handler does not run. An error the handler returns is handed to
// echo's HTTPErrorHandler at once (c.Error), so that its status is known:
// a 5xx, a panic, or an error echo answers with 5xx is recorded as an
// error. Handlers read the identity with
// flowhttp.IdentityFrom(c.Request().Context()).
func Middleware(eng *flow.Engine, opts ...flowhttp.Option) echo.MiddlewareFunc {
	guarded := flowhttp.Middleware(eng, opts...)(http.HandlerFunc(runHandler))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if p := c.Path(); p != "" {
				// flowhttp names a resource by r.Pattern, which only
				// http.ServeMux sets; echo's route is the same thing.
				req.Pattern = req.Method + " " + p
			}
			// Writes go through echo's Response, so its Status, Size and
			// Committed stay right for the middleware around this one.
			ew := &echoWriter{ResponseWriter: c.Response(), c: c, next: next}
			guarded.ServeHTTP(ew, req)
			return nil // handled here: refused, or the handler's error given to c.Error
		}
	}
}

// echoWriter carries the echo context through flowhttp to runHandler, which
// finds it by unwrapping the writer it is given.
type echoWriter struct {
	http.ResponseWriter
	c    echo.Context
	next echo.HandlerFunc
}

// WriteHeader drops a status already sent: runHandler repeats the final
// status so that flowhttp records a 5xx.
func (w *echoWriter) WriteHeader(code int) {
	if w.c.Response().Committed {
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *echoWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// runHandler is the guarded part: the next handler, with the request
// flowhttp passes on (it carries the Identity).
func runHandler(w http.ResponseWriter, r *http.Request) {
	ew := findEcho(w)
	if ew == nil {
		http.Error(w, "flowecho: middleware misconfigured", http.StatusInternalServerError)
		return
	}
	c := ew.c
	c.SetRequest(r)
	if err := ew.next(c); err != nil {
		c.Error(err)
	}
	if s := c.Response().Status; s >= 500 {
		w.WriteHeader(s) // seen by flowhttp's status recorder, dropped by echoWriter
	}
}

func findEcho(w http.ResponseWriter) *echoWriter {
	for {
		switch x := w.(type) {
		case *echoWriter:
			return x
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}
