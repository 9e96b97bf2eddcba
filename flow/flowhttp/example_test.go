package flowhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/flow/flowhttp"
)

func ExampleMiddleware() {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	eng := flow.NewEngine(flow.WithClock(clk))
	_ = eng.LoadRules([]flow.Rule{{ID: "orders", Resource: "GET /orders/{id}",
		Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Minute}})

	mw := flowhttp.Middleware(eng)
	mux := http.NewServeMux()
	mux.Handle("GET /orders/{id}", mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "order", r.PathValue("id"))
	})))

	clk.Advance(15 * time.Second)
	for _, id := range []string{"1", "2"} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/orders/"+id, nil))
		if w.Code != http.StatusOK {
			fmt.Println(w.Code, w.Header().Get("Retry-After"), w.Header().Get("RateLimit"))
			continue
		}
		fmt.Print(w.Body)
	}
	// Output:
	// order 1
	// 429 45 "orders";r=0;t=45
}

func ExampleClientIP() {
	trusted, _ := flowhttp.ParseTrustedProxies("10.0.0.0/8")
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-Forwarded-For", "6.6.6.6, 198.51.100.4")

	r.RemoteAddr = "10.0.0.1:4711" // our load balancer
	fmt.Println(flowhttp.ClientIP(r, trusted, nil))
	r.RemoteAddr = "203.0.113.9:4711" // anyone else: the header is ignored
	fmt.Println(flowhttp.ClientIP(r, trusted, nil))
	// Output:
	// 198.51.100.4
	// 203.0.113.9
}

func ExampleNewServeMux() {
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	_ = eng.LoadRules([]flow.Rule{{ID: "per-user", Resource: "POST /carts/{id}/items", Level: flow.LevelUser,
		Algorithm: flow.AlgoTokenBucket, Limit: 2, Window: time.Second}})

	mux := flowhttp.NewServeMux(eng, flowhttp.WithUser(func(r *http.Request) string { return r.Header.Get("X-User") }))
	mux.HandleFunc("POST /carts/{id}/items", func(w http.ResponseWriter, r *http.Request) {})

	for _, user := range []string{"ann", "ann", "ann", "ann", "bob"} {
		r := httptest.NewRequest("POST", "/carts/7/items", nil)
		r.Header.Set("X-User", user)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Println(user, w.Code)
	}
	// Output:
	// ann 200
	// ann 200
	// ann 200
	// ann 429
	// bob 200
}
