package flowhttp

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// The package holds no state a caller can change: the default proxy headers
// come as a fresh copy, and no two refusals share a header value slice.

func TestDefaultProxyHeadersIsACopy(t *testing.T) {
	got := DefaultProxyHeaders()
	want := []string{HeaderForwarded, HeaderXForwardedFor, HeaderXRealIP}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	got[0] = "X-Spoofed"
	if again := DefaultProxyHeaders(); again[0] != HeaderForwarded {
		t.Fatalf("after changing a returned slice: got %q, want %q first", again, HeaderForwarded)
	}
}

func TestRefusalsDoNotShareHeaderValues(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := newEngine(t, clk, flow.Rule{ID: "fw", Resource: "GET /", Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Minute})
	h := Middleware(eng, WithResource(func(*http.Request) string { return "GET /" }))(&okHandler{})
	serve(h, http.MethodGet, "/", "192.0.2.1:1", nil)
	first := serve(h, http.MethodGet, "/", "192.0.2.1:1", nil)
	if first.Code != http.StatusTooManyRequests {
		t.Fatalf("status: got %d, want 429", first.Code)
	}
	// A careless handler (or test) rewriting a value in place must not
	// change what the next refusal sends.
	for _, k := range []string{"Content-Type", "X-Content-Type-Options", HeaderRetryAfter} {
		first.Header()[k][0] = "changed"
	}
	second := serve(h, http.MethodGet, "/", "192.0.2.1:1", nil)
	wantHeaders(t, second.Header(), map[string]string{
		"Content-Type":           "application/problem+json",
		"X-Content-Type-Options": "nosniff",
	})
	if got := second.Header().Get(HeaderRetryAfter); got == "" || got == "changed" {
		t.Fatalf("Retry-After: got %q, want whole seconds", got)
	}
}

// TestCustomBlockedHandlerKeepsItsRefusal: a handler given by
// WithBlockedHandler may keep the *BlockError, and change it (the
// middleware decides without allocating, so it hands such a handler its
// own copy, the shared Refuser included): the next refusal is unchanged.
func TestCustomBlockedHandlerKeepsItsRefusal(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := newEngine(t, clk, flow.Rule{ID: "fw", Resource: "GET /", Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Minute})
	var kept []*flow.BlockError
	h := Middleware(eng, WithResource(func(*http.Request) string { return "GET /" }),
		WithBlockedHandler(func(w http.ResponseWriter, _ *http.Request, be *flow.BlockError) {
			kept = append(kept, be)
			be.RuleID = "hidden" // after the copy is checked below: must stay this handler's
			w.WriteHeader(http.StatusServiceUnavailable)
		}))(&okHandler{})
	serve(h, http.MethodGet, "/", "192.0.2.1:1", nil)
	for range 2 {
		if w := serve(h, http.MethodGet, "/", "192.0.2.1:1", nil); w.Code != http.StatusServiceUnavailable {
			t.Fatalf("status: got %d, want 503", w.Code)
		}
	}
	if len(kept) != 2 || kept[0] == kept[1] {
		t.Fatalf("got %d refusals (distinct: %v), want 2 distinct", len(kept), len(kept) == 2 && kept[0] != kept[1])
	}
	if kept[0].Refuser == kept[1].Refuser {
		t.Fatal("the two refusals share one Refuser: a handler's change would reach the next")
	}
	for _, be := range kept {
		if be.RuleID != "hidden" || be.Resource != "GET /" || be.Reason != flow.ReasonRateLimited {
			t.Fatalf("kept refusal: got %+v by %+v, want the handler's rule ID on GET / rate limited", *be, *be.Refuser)
		}
	}
	if _, err := eng.Entry("GET /"); err == nil {
		t.Fatal("Entry passed")
	} else if be := new(flow.BlockError); !errors.As(err, &be) || be.RuleID != "fw" {
		t.Fatalf("Entry after the handler changed its copies: %v, want refused by rule fw", err)
	}
}
