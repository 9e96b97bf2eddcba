package flowhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// discardWriter is a ResponseWriter that keeps nothing, so a benchmark
// measures the middleware and not the recorder.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

var trivial = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })

func benchServe(b *testing.B, h http.Handler, r *http.Request) {
	b.Helper()
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ServeHTTP(w, r)
		clear(w.h)
	}
}

// routed returns a request as the mux hands it to a wrapped route handler.
func routed() *http.Request {
	r := httptest.NewRequest("GET", "/orders/42", nil)
	r.RemoteAddr = "198.51.100.4:5000"
	r.Pattern = "GET /orders/{id}"
	r.Header.Set("X-User", "alice")
	return r
}

func bigLimits() []flow.Rule {
	return []flow.Rule{
		{ID: "g", Resource: "GET /orders/{id}", Algorithm: flow.AlgoTokenBucket, Limit: 1e12, Window: time.Second},
		{ID: "u", Resource: "GET /orders/{id}", Level: flow.LevelUser, Algorithm: flow.AlgoTokenBucket, Limit: 1e12, Window: time.Second},
		{ID: "i", Resource: "GET /orders/{id}", Level: flow.LevelIP, Algorithm: flow.AlgoTokenBucket, Limit: 1e12, Window: time.Second},
	}
}

func xUser(r *http.Request) string { return r.Header.Get("X-User") }

// BenchmarkBareHandler is the baseline: the trivial handler alone.
func BenchmarkBareHandler(b *testing.B) { benchServe(b, trivial, routed()) }

// BenchmarkMiddlewareNoRule: a resource without rules (the engine's
// shared no-op permit).
func BenchmarkMiddlewareNoRule(b *testing.B) {
	benchServe(b, Middleware(newEngine(b, clock.Real()))(trivial), routed())
}

// BenchmarkMiddlewarePass: global, user and IP token buckets that never
// refuse, on the real clock.
func BenchmarkMiddlewarePass(b *testing.B) {
	eng := newEngine(b, clock.Real(), bigLimits()...)
	benchServe(b, Middleware(eng, WithUser(xUser))(trivial), routed())
}

// BenchmarkMiddlewarePassNoIdentity is the pass path without the request
// copy that carries the Identity (WithIdentityContext(false)).
func BenchmarkMiddlewarePassNoIdentity(b *testing.B) {
	eng := newEngine(b, clock.Real(), bigLimits()...)
	benchServe(b, Middleware(eng, WithUser(xUser), WithIdentityContext(false))(trivial), routed())
}

// BenchmarkEngineDirect is what BenchmarkMiddlewarePass asks of the engine,
// called directly: the difference is the middleware's own cost.
func BenchmarkEngineDirect(b *testing.B) {
	eng := newEngine(b, clock.Real(), bigLimits()...)
	r := routed()
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p, err := eng.Entry("GET /orders/{id}", flow.WithContext(r.Context()), flow.WithUser("alice"), flow.WithIP("198.51.100.4"))
		if err != nil {
			b.Fatal(err)
		}
		trivial.ServeHTTP(w, r)
		p.Exit()
	}
}

// BenchmarkMiddlewarePassTrustedProxy: as Pass, with the client taken from
// X-Forwarded-For behind a trusted proxy.
func BenchmarkMiddlewarePassTrustedProxy(b *testing.B) {
	eng := newEngine(b, clock.Real(), bigLimits()...)
	r := routed()
	r.RemoteAddr = "10.0.0.1:5000"
	r.Header.Set("X-Forwarded-For", "203.0.113.9, 198.51.100.4")
	h := Middleware(eng, WithUser(xUser), WithTrustedProxies(mustPrefixes(b, "10.0.0.0/8")...))(trivial)
	benchServe(b, h, r)
}

// BenchmarkMiddlewarePassQuotaHeaders: as Pass, writing the RateLimit
// fields on the response.
func BenchmarkMiddlewarePassQuotaHeaders(b *testing.B) {
	eng := newEngine(b, clock.Real(), bigLimits()...)
	benchServe(b, Middleware(eng, WithUser(xUser), WithQuotaHeaders(true))(trivial), routed())
}

// BenchmarkMiddlewareBlocked: every request refused with 429, headers and
// the problem body.
func BenchmarkMiddlewareBlocked(b *testing.B) {
	eng := newEngine(b, clock.NewFake(epoch), flow.Rule{ID: "none", Resource: "GET /orders/{id}",
		Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Hour})
	h := Middleware(eng)(trivial)
	h.ServeHTTP(&discardWriter{h: http.Header{}}, routed())
	benchServe(b, h, routed())
}

// BenchmarkMiddlewareParallel: the Pass setup from every P at once.
func BenchmarkMiddlewareParallel(b *testing.B) {
	eng := newEngine(b, clock.Real(), bigLimits()...)
	h := Middleware(eng, WithUser(xUser))(trivial)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := routed()
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			h.ServeHTTP(w, r)
		}
	})
}

func TestMiddlewareAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation count: not under -short or the race detector")
	}
	eng := newEngine(t, clock.Real(), bigLimits()...)
	h := Middleware(eng, WithUser(xUser))(trivial)
	r, w := routed(), &discardWriter{h: http.Header{}}
	h.ServeHTTP(w, r) // warm the engine's permit pool and key tables
	// Two allocations: the per-request state (the status-recording
	// ResponseWriter and the context carrying the Identity) and the request
	// copy r.WithContext makes so the handler can read the Identity.
	if n := testing.AllocsPerRun(200, func() { h.ServeHTTP(w, r) }); n > 2 {
		t.Errorf("middleware pass path allocates %v times per request, want at most 2", n)
	}
	// Without the identity on the context, only the per-request state.
	h = Middleware(eng, WithUser(xUser), WithIdentityContext(false))(trivial)
	h.ServeHTTP(w, r)
	if n := testing.AllocsPerRun(200, func() { h.ServeHTTP(w, r) }); n > 1 {
		t.Errorf("WithIdentityContext(false): %v allocations per request, want at most 1", n)
	}
}
