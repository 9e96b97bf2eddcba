package flowhttp

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// backend answers 503 (Retry-After: 0) to the first fail calls, then 200.
func backend(t *testing.T, fail int64) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= fail {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func outboundEngine(t *testing.T, rules ...flow.Rule) *flow.Engine {
	t.Helper()
	e := flow.NewEngine()
	if err := e.LoadRules(rules); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestTransportRetriesIdempotentOnly(t *testing.T) {
	srv, hits := backend(t, 2)
	host := strings.TrimPrefix(srv.URL, "http://")
	host = host[:strings.LastIndex(host, ":")]
	e := outboundEngine(t, flow.Rule{ID: "rb", Resource: "GET " + host, Algorithm: flow.AlgoRetryBudget})
	c := &http.Client{Transport: NewTransport(e, nil, WithRetries(flow.RetryPolicy{BaseDelay: time.Millisecond}))}
	resp, err := c.Get(srv.URL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v %v, want 200 after two retries", resp, err)
	}
	resp.Body.Close()
	if got := hits.Load(); got != 3 {
		t.Fatalf("backend saw %d attempts, want 3", got)
	}
	st := e.Snapshot().Rules[0].Outbound
	if st.FirstAttempts != 1 || st.Retries != 2 {
		t.Fatalf("budget stats %+v, want 1 first attempt, 2 retries", st)
	}
	// A POST is not idempotent: one attempt, the 503 handed back.
	hits.Store(0)
	resp, err = c.Post(srv.URL, "text/plain", strings.NewReader("x"))
	if err != nil || resp.StatusCode != 503 || hits.Load() != 1 {
		t.Fatalf("POST: %v %v after %d attempts, want one attempt answered 503", resp, err, hits.Load())
	}
	resp.Body.Close()
	// Marked idempotent, it is retried, its body sent again.
	hits.Store(0)
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x"))
	resp, err = c.Do(Idempotent(req))
	if err != nil || resp.StatusCode != 200 || hits.Load() != 3 {
		t.Fatalf("marked POST: %v %v after %d attempts, want 200 after 3", resp, err, hits.Load())
	}
	resp.Body.Close()
}

func TestTransportBudgetRefusesRetries(t *testing.T) {
	srv, hits := backend(t, 1<<30)
	host := strings.TrimPrefix(srv.URL, "http://")
	host = host[:strings.LastIndex(host, ":")]
	// A tiny minimum: 0.1 retries/s over 10s is one retry.
	e := outboundEngine(t, flow.Rule{ID: "rb", Resource: "GET " + host, Algorithm: flow.AlgoRetryBudget,
		Ratio: 0.001, MinPerSecond: 0.1})
	c := &http.Client{Transport: NewTransport(e, nil, WithRetries(flow.RetryPolicy{BaseDelay: time.Millisecond}))}
	for range 3 {
		resp, err := c.Get(srv.URL)
		if err != nil || resp.StatusCode != 503 {
			t.Fatalf("GET: %v %v, want the backend's 503", resp, err)
		}
		resp.Body.Close()
	}
	if got := hits.Load(); got != 4 { // 3 first attempts and the one retry the budget had
		t.Fatalf("backend saw %d attempts, want 4", got)
	}
}

func TestTransportThrottleRefusesLocally(t *testing.T) {
	srv, hits := backend(t, 1<<30)
	e := outboundEngine(t, flow.Rule{ID: "thr", Resource: "api", Algorithm: flow.AlgoClientThrottle})
	c := &http.Client{Transport: NewTransport(e, nil, WithCallResource(func(*http.Request) string { return "api" }))}
	refused := 0
	for range 200 {
		resp, err := c.Get(srv.URL)
		var be *flow.BlockError
		switch {
		case errors.As(err, &be):
			if be.Reason != flow.ReasonThrottled {
				t.Fatalf("refusal %v, want ReasonThrottled", be)
			}
			refused++
		case err != nil:
			t.Fatal(err)
		default:
			resp.Body.Close()
		}
	}
	if refused < 150 || hits.Load()+int64(refused) != 200 {
		t.Fatalf("%d refused locally, %d reached the backend, want >= 150 refused and the rest sent", refused, hits.Load())
	}
}
