package flowhttp

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// TestCostSettledFromTheHandler: requests reserve an estimate from their
// size and settle what the handler reports, with SetCost or a response
// header; the rate-limit headers count in the cost's unit.
func TestCostSettledFromTheHandler(t *testing.T) {
	rule := flow.Rule{ID: "tokens", Resource: "POST /llm", Algorithm: flow.AlgoFixedWindow, Limit: 1000, Window: time.Hour}
	for _, tc := range []struct {
		name   string
		report func(w http.ResponseWriter, n int)
		opts   []Option
	}{
		{"SetCost", func(w http.ResponseWriter, n int) { SetCost(w, n) }, nil},
		{"header", func(w http.ResponseWriter, n int) { w.Header().Set("X-Usage", strconv.Itoa(n)) }, []Option{WithCostHeader("x-usage")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := newEngine(t, clock.NewFake(epoch), rule)
			used := 0
			h := http.NewServeMux()
			opts := append([]Option{WithQuotaHeaders(true), WithCost(func(r *http.Request) int {
				n, _ := strconv.Atoi(r.Header.Get("Estimate"))
				return n
			})}, tc.opts...)
			h.Handle("POST /llm", Middleware(eng, opts...)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				tc.report(w, used)
			})))
			send := func(estimate, actual int) (status int, remaining string) {
				used = actual
				w := serve(h, "POST", "/llm", "10.0.0.1:1", http.Header{"Estimate": {strconv.Itoa(estimate)}})
				return w.Code, w.Header().Get(HeaderXRateLimitRemain)
			}
			// Reserve 100, use 400: 1000-100 left when the headers are
			// written, 600 once settled.
			if code, rem := send(100, 400); code != 200 || rem != "900" {
				t.Fatalf("first: %d, remaining %q, want 200 and 900", code, rem)
			}
			if code, rem := send(500, 50); code != 200 || rem != "100" {
				t.Fatalf("second (500 of the 600 left): %d, remaining %q, want 200 and 100", code, rem)
			}
			// 550 left after the refund: an estimate of 600 is refused.
			if code, _ := send(600, 1); code != http.StatusTooManyRequests {
				t.Fatalf("600 with 550 left: %d, want 429", code)
			}
			if code, _ := send(550, 550); code != 200 {
				t.Fatalf("550 with 550 left: %d, want 200", code)
			}
		})
	}
}

// TestSetCostOutsideTheMiddleware: a writer the middleware did not serve
// takes no cost.
func TestSetCostOutsideTheMiddleware(t *testing.T) {
	if SetCost(nil, 1) {
		t.Error("SetCost(nil) reported true")
	}
	if SetCost(&plainWriter{}, 1) {
		t.Error("SetCost on a plain writer reported true")
	}
}

type plainWriter struct{ http.ResponseWriter }
