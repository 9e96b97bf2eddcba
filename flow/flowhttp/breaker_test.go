package flowhttp

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// failing answers status until told otherwise.
type failing struct{ status int }

func (h *failing) ServeHTTP(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(h.status) }

var payBreaker = flow.Rule{ID: "pay-errors", Resource: "POST /pay", Algorithm: flow.AlgoCircuitBreaker,
	Strategy: flow.BreakerErrorRatio, Threshold: 0.5, MinRequests: 4, Window: 10 * time.Second,
	OpenFor: 5 * time.Second}

func TestBreakerOpensOn5xxAnswers503(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := newEngine(t, clk, payBreaker)
	dep := &failing{status: http.StatusBadGateway}
	mux := http.NewServeMux()
	mux.Handle("POST /pay", Middleware(eng)(dep))
	for i := 0; i < 4; i++ {
		if w := serve(mux, "POST", "/pay", "192.0.2.1:1", nil); w.Code != http.StatusBadGateway {
			t.Fatalf("call %d: %d, want the handler's 502", i, w.Code)
		}
	}
	clk.Advance(time.Second)
	w := serve(mux, "POST", "/pay", "192.0.2.1:1", nil)
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("open breaker answered %d, want 503", w.Code)
	}
	wantHeaders(t, w.Header(), map[string]string{"Retry-After": "4", "Content-Type": "application/problem+json",
		"RateLimit-Policy": "", "RateLimit": ""})
	var p Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	want := Problem{Type: "about:blank", Title: "Service Unavailable", Status: 503, RetryAfter: 4, Level: "global",
		Rule: "pay-errors", Detail: `circuit breaker open at the global level by rule "pay-errors"`}
	if p != want {
		t.Fatalf("problem %+v, want %+v", p, want)
	}
	// Recovery: the dependency heals, the probe succeeds, calls pass.
	dep.status = http.StatusOK
	clk.Advance(4 * time.Second)
	for i := 0; i < 3; i++ {
		if w := serve(mux, "POST", "/pay", "192.0.2.1:1", nil); w.Code != http.StatusOK {
			t.Fatalf("after recovery, call %d: %d", i, w.Code)
		}
	}
}

func TestBreakerErrorStatusPredicate(t *testing.T) {
	clk := clock.NewFake(epoch)
	eng := newEngine(t, clk, payBreaker)
	dep := &failing{status: http.StatusTooManyRequests}
	is4xx := func(s int) bool { return s >= 400 }
	for _, tc := range []struct {
		opts []Option
		open bool
	}{{nil, false}, {[]Option{WithErrorStatus(is4xx)}, true}} {
		_ = eng.LoadRules(nil) // forget the breaker's state
		_ = eng.LoadRules([]flow.Rule{payBreaker})
		h := Middleware(eng, append(tc.opts, WithResource(func(*http.Request) string { return "POST /pay" }))...)(dep)
		for i := 0; i < 5; i++ {
			serve(h, "POST", "/pay", "192.0.2.1:1", nil)
		}
		if got := serve(h, "POST", "/pay", "192.0.2.1:1", nil).Code == http.StatusServiceUnavailable; got != tc.open {
			t.Errorf("with %d options: open %v after five 429 answers, want %v", len(tc.opts), got, tc.open)
		}
	}
}
