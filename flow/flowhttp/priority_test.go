package flowhttp

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// TestPriorityHeader: a concurrency limit of 2 with one call in flight has
// room for a normal call but not for a low one (low may fill half); the
// header says low only when it is believed.
func TestPriorityHeader(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "c", Resource: "GET /x", Algorithm: flow.AlgoConcurrency, Limit: 2})
	held, err := eng.Entry("GET /x")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Exit()
	proxies := WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8"))
	low := http.Header{"X-Priority": {"low"}}
	cases := []struct {
		name   string
		opts   []Option
		remote string
		header http.Header
		want   int
	}{
		{"untrusted peer: ignored", []Option{proxies}, "192.0.2.1:5000", low, http.StatusOK},
		{"trusted proxy: believed", []Option{proxies}, "10.1.2.3:5000", low, http.StatusTooManyRequests},
		{"any peer when trusted by option", []Option{WithTrustPriority(true)}, "192.0.2.1:5000", low, http.StatusTooManyRequests},
		{"upper case value", []Option{WithTrustPriority(true)}, "192.0.2.1:5000", http.Header{"X-Priority": {"LOW"}}, http.StatusTooManyRequests},
		{"unknown value: normal", []Option{WithTrustPriority(true)}, "192.0.2.1:5000", http.Header{"X-Priority": {"urgent"}}, http.StatusOK},
		{"custom header", []Option{WithTrustPriority(true), WithPriorityHeader("x-class")}, "192.0.2.1:5000", http.Header{"X-Class": {"low"}}, http.StatusTooManyRequests},
		{"header off", []Option{WithTrustPriority(true), WithPriorityHeader("")}, "192.0.2.1:5000", low, http.StatusOK},
	}
	for _, c := range cases {
		h := Middleware(eng, c.opts...)(&okHandler{})
		w := serve(h, "GET", "/x", c.remote, c.header)
		if w.Code != c.want {
			t.Errorf("%s: status %d, want %d (%s)", c.name, w.Code, c.want, w.Body)
		}
	}
}
