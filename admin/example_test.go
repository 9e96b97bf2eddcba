package admin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/flow"
)

// Mount the admin under /flowgate/ beside a service; reads are open,
// writes need the token.
func Example() {
	eng := flow.NewEngine()
	_ = eng.LoadRules([]flow.Rule{{ID: "per-user", Resource: "GET /orders", Level: flow.LevelUser,
		Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Hour}})
	eng.Entry("GET /orders", flow.WithUser("alice"))
	eng.Entry("GET /orders", flow.WithUser("alice")) // refused

	mux := http.NewServeMux()
	mux.Handle("/flowgate/", http.StripPrefix("/flowgate", admin.New(eng, admin.WithWriteToken("s3cret"))))

	show := func(method, path, token string) {
		req := httptest.NewRequest(method, path, nil)
		if method != "GET" {
			req.Header.Set("Content-Type", "application/json") // writes take JSON
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		fmt.Println(method, path, w.Code, strings.Join(strings.Fields(w.Body.String()), " "))
	}
	show("GET", "/flowgate/api/key?rule=per-user&key=alice", "")
	show("POST", "/flowgate/api/key/reset?rule=per-user&key=alice", "")
	show("POST", "/flowgate/api/key/reset?rule=per-user&key=alice", "s3cret")
	// Output:
	// GET /flowgate/api/key?rule=per-user&key=alice 200 { "rule": "per-user", "resource": "GET /orders", "level": "user", "key": "alice", "tracked": true, "limit": 1, "remaining": 0, "refused": 1 }
	// POST /flowgate/api/key/reset?rule=per-user&key=alice 401 { "error": "a valid bearer token or client certificate is required to write" }
	// POST /flowgate/api/key/reset?rule=per-user&key=alice 200 { "rule": "per-user", "key": "alice", "held": true }
}
