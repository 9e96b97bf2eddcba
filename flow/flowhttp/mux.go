package flowhttp

import (
	"net/http"

	"github.com/flowgate/flowgate/flow"
)

// ServeMux is an http.ServeMux that wraps every handler registered on it with
// the middleware, so each request is guarded under the pattern of the route
// it matched. Requests no route matches (404, 405, redirects) are answered by
// the mux unguarded.
type ServeMux struct {
	*http.ServeMux
	wrap func(http.Handler) http.Handler
}

// NewServeMux returns an empty ServeMux guarded by Middleware(eng, opts...).
func NewServeMux(eng *flow.Engine, opts ...Option) *ServeMux {
	return &ServeMux{ServeMux: http.NewServeMux(), wrap: Middleware(eng, opts...)}
}

// Handle registers h for pattern, guarded.
func (m *ServeMux) Handle(pattern string, h http.Handler) {
	m.ServeMux.Handle(pattern, m.wrap(h))
}

// HandleFunc registers f for pattern, guarded.
func (m *ServeMux) HandleFunc(pattern string, f func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(f))
}
