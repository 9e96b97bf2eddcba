package flowhttp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

const peerAddr = "203.0.113.9:5000"

func decodeProblem(t *testing.T, body string) Problem {
	t.Helper()
	var p Problem
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("problem body %q: %v", body, err)
	}
	return p
}

func TestFixedWindowHeaders(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := newEngine(t, clk, flow.Rule{ID: "orders-fw", Resource: "GET /orders/{id}",
		Algorithm: flow.AlgoFixedWindow, Limit: 2, Window: 10 * time.Second})
	mux := http.NewServeMux()
	ok := &okHandler{}
	mux.Handle("GET /orders/{id}", Middleware(eng, WithQuotaHeaders(true))(ok))
	// 2.5s into the first 10s window: it resets in 7.5s.
	clk.Advance(2500 * time.Millisecond)

	w := serve(mux, "GET", "/orders/1", peerAddr, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("first request: %d, want 200", w.Code)
	}
	wantHeaders(t, w.Header(), map[string]string{
		"RateLimit-Policy": `"orders-fw";q=2;w=10`, "RateLimit": `"orders-fw";r=1;t=8`,
		"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "8", "Retry-After": "",
	})
	if w = serve(mux, "GET", "/orders/2", peerAddr, nil); w.Code != http.StatusOK {
		t.Fatalf("second request: %d, want 200", w.Code)
	}
	wantHeaders(t, w.Header(), map[string]string{"RateLimit": `"orders-fw";r=0;t=8`})

	w = serve(mux, "GET", "/orders/3", peerAddr, nil)
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("third request: %d, want 429", w.Code)
	}
	wantHeaders(t, w.Header(), map[string]string{
		"Retry-After":      "8", // 7.5s rounded up
		"RateLimit-Policy": `"orders-fw";q=2;w=10`, "RateLimit": `"orders-fw";r=0;t=8`,
		"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "8",
		"Content-Type": "application/problem+json", "X-Content-Type-Options": "nosniff",
	})
	p := decodeProblem(t, w.Body.String())
	want := Problem{Type: "about:blank", Title: "Too Many Requests", Status: 429, RetryAfter: 8, Level: "global",
		Rule: "orders-fw", Detail: `rate limited at the global level by rule "orders-fw"`}
	if p != want {
		t.Errorf("problem = %+v, want %+v", p, want)
	}
	if ok.calls != 2 {
		t.Errorf("handler ran %d times, want 2", ok.calls)
	}

	// The next window opens: full quota again.
	clk.Advance(7500 * time.Millisecond)
	w = serve(mux, "GET", "/orders/4", peerAddr, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("request in the next window: %d, want 200", w.Code)
	}
	wantHeaders(t, w.Header(), map[string]string{"RateLimit": `"orders-fw";r=1;t=10`})
}

func TestTokenBucketHeaders(t *testing.T) {
	clk := clock.NewFake(epoch)
	// 2 permits per 5s: one every 2.5s, burst 2, starting full.
	eng := newEngine(t, clk, flow.Rule{ID: "tb", Resource: "GET /feed",
		Algorithm: flow.AlgoTokenBucket, Limit: 2, Window: 5 * time.Second, Burst: 2})
	mux := http.NewServeMux()
	mux.Handle("GET /feed", Middleware(eng, WithQuotaHeaders(true))(&okHandler{}))

	w := serve(mux, "GET", "/feed", peerAddr, nil)
	// One permit left; refilling the one taken takes 2.5s.
	wantHeaders(t, w.Header(), map[string]string{
		"RateLimit-Policy": `"tb";q=2;w=5`, "RateLimit": `"tb";r=1;t=3`,
		"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "3",
	})
	// Guava semantics: the two stored permits, then one more on credit
	// that the next caller pays for.
	passed := 1
	for ; passed < 10; passed++ {
		if w = serve(mux, "GET", "/feed", peerAddr, nil); w.Code != http.StatusOK {
			break
		}
	}
	if passed != 3 {
		t.Fatalf("%d requests passed, want 3 (burst 2 + one on credit)", passed)
	}
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429", w.Code)
	}
	wantHeaders(t, w.Header(), map[string]string{
		"Retry-After":      "3", // the 2.5s debt, rounded up
		"RateLimit-Policy": `"tb";q=2;w=5`, "RateLimit": `"tb";r=0;t=3`,
		"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "3",
	})
	if p := decodeProblem(t, w.Body.String()); p.RetryAfter != 3 || p.Rule != "tb" || p.Status != 429 {
		t.Errorf("problem = %+v", p)
	}
	// Honest Retry-After: waiting that long lets the next call through.
	clk.Advance(3 * time.Second)
	if w = serve(mux, "GET", "/feed", peerAddr, nil); w.Code != http.StatusOK {
		t.Errorf("after Retry-After: %d, want 200", w.Code)
	}
}

func TestNoQuotaHeadersByDefault(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "r", Resource: "GET /x", Algorithm: flow.AlgoFixedWindow, Limit: 5})
	w := serve(Middleware(eng)(&okHandler{}), "GET", "/x", peerAddr, nil)
	wantHeaders(t, w.Header(), map[string]string{"RateLimit": "", "RateLimit-Policy": "", "X-RateLimit-Limit": ""})
}

func TestResourceNameIsPattern(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := newEngine(t, clk, flow.Rule{ID: "one", Resource: "GET /orders/{id}", Algorithm: flow.AlgoFixedWindow, Limit: 1})
	var blockedAs []string
	opt := WithBlockedHandler(func(w http.ResponseWriter, r *http.Request, be *flow.BlockError) {
		blockedAs = append(blockedAs, be.Resource)
		w.WriteHeader(http.StatusTeapot)
	})

	t.Run("wrapped route", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("GET /orders/{id}", Middleware(eng, opt)(&okHandler{}))
		if w := serve(mux, "GET", "/orders/17", peerAddr, nil); w.Code != 200 {
			t.Fatalf("first: %d", w.Code)
		}
		// A different id is the same resource, so the quota is shared.
		if w := serve(mux, "GET", "/orders/18", peerAddr, nil); w.Code != http.StatusTeapot {
			t.Fatalf("second: %d, want the blocked handler's 418", w.Code)
		}
	})
	clk.Advance(time.Second)
	t.Run("ServeMux", func(t *testing.T) {
		mux := NewServeMux(eng, opt)
		mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {})
		if w := serve(mux, "GET", "/orders/19", peerAddr, nil); w.Code != 200 {
			t.Fatalf("first: %d", w.Code)
		}
		if w := serve(mux, "GET", "/orders/20", peerAddr, nil); w.Code != http.StatusTeapot {
			t.Fatalf("second: %d, want 418", w.Code)
		}
		if w := serve(mux, "GET", "/nowhere", peerAddr, nil); w.Code != http.StatusNotFound {
			t.Fatalf("unrouted: %d, want 404", w.Code)
		}
	})
	if want := []string{"GET /orders/{id}", "GET /orders/{id}"}; strings.Join(blockedAs, "|") != strings.Join(want, "|") {
		t.Errorf("blocked as %q, want %q", blockedAs, want)
	}
	rs := resourceStats(t, eng, "GET /orders/{id}")
	if rs.Passed != 2 || rs.Blocked[flow.LevelGlobal] != 2 {
		t.Errorf("stats passed %d blocked %d, want 2 and 2", rs.Passed, rs.Blocked[flow.LevelGlobal])
	}
}

func TestResourceFallbackAndOption(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch),
		flow.Rule{ID: "raw", Resource: "POST /upload/a", Algorithm: flow.AlgoFixedWindow, Limit: 1},
		flow.Rule{ID: "custom", Resource: "uploads", Algorithm: flow.AlgoFixedWindow, Limit: 1})
	// No mux: "METHOD path".
	h := Middleware(eng)(&okHandler{})
	serve(h, "POST", "/upload/a", peerAddr, nil)
	if w := serve(h, "POST", "/upload/a", peerAddr, nil); w.Code != 429 {
		t.Errorf("fallback name: %d, want 429 from rule raw", w.Code)
	}
	h = Middleware(eng, WithResource(func(*http.Request) string { return "uploads" }))(&okHandler{})
	serve(h, "POST", "/upload/b", peerAddr, nil)
	if w := serve(h, "POST", "/upload/c", peerAddr, nil); w.Code != 429 {
		t.Errorf("custom name: %d, want 429 from rule custom", w.Code)
	}
}

func TestUserOption(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "per-user", Resource: "GET /x", Level: flow.LevelUser,
		Algorithm: flow.AlgoFixedWindow, Limit: 1})
	h := Middleware(eng, WithUser(func(r *http.Request) string { return r.Header.Get("X-User") }))(&okHandler{})
	alice, bob := http.Header{"X-User": {"alice"}}, http.Header{"X-User": {"bob"}}
	for i, tc := range []struct {
		h    http.Header
		want int
	}{{alice, 200}, {bob, 200}, {alice, 429}, {nil, 200}, {nil, 200}} {
		if w := serve(h, "GET", "/x", peerAddr, tc.h); w.Code != tc.want {
			t.Errorf("request %d (%v): %d, want %d", i, tc.h, w.Code, tc.want)
		}
	}
}

// The headers state the effective limit: an adaptive rule scaled by the
// CPU controller advertises the scaled quota.
func TestHeadersShowAdaptiveLimit(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "ad", Resource: "GET /a", Algorithm: flow.AlgoFixedWindow,
		Limit: 10, Window: time.Minute, Adaptive: true})
	eng.SetAdaptiveFactor(0.5)
	h := Middleware(eng, WithQuotaHeaders(true))(&okHandler{})
	w := serve(h, "GET", "/a", peerAddr, nil)
	wantHeaders(t, w.Header(), map[string]string{"RateLimit-Policy": `"ad";q=5;w=60`, "RateLimit": `"ad";r=4;t=60`})
}
