package flowhttp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// slowFirst answers its first call only when the caller gives up (or after
// 10 s), and every later call at once.
func slowFirst(t *testing.T) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	var n, cancelled atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			select {
			case <-r.Context().Done():
				cancelled.Add(1)
				return
			case <-time.After(10 * time.Second):
			}
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv, &n, &cancelled
}

func testHost(url string) string {
	host := strings.TrimPrefix(url, "http://")
	return host[:strings.LastIndex(host, ":")]
}

// A call stuck on a slow backend is answered by its hedge, counted as a
// retry of the budget; the stuck copy is cancelled.
func TestTransportHedges(t *testing.T) {
	srv, hits, cancelled := slowFirst(t)
	e := outboundEngine(t, flow.Rule{ID: "rb", Resource: "GET " + testHost(srv.URL), Algorithm: flow.AlgoRetryBudget})
	c := &http.Client{Transport: NewTransport(e, nil, WithHedging(20*time.Millisecond))}
	start := time.Now()
	resp, err := c.Get(srv.URL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v %v, want the hedge's 200", resp, err)
	}
	resp.Body.Close()
	if d := time.Since(start); d >= 10*time.Second {
		t.Fatalf("GET took %v: it waited for the slow copy", d)
	}
	if got := hits.Load(); got != 2 {
		t.Errorf("backend saw %d calls, want 2 (the call and its hedge)", got)
	}
	st := e.Snapshot().Rules[0].Outbound
	if st.FirstAttempts != 1 || st.Retries != 1 {
		t.Errorf("budget stats %+v, want 1 first attempt and the hedge as 1 retry", st)
	}
	srv.Close() // waits for the handlers: the slow one must have seen its cancel
	if cancelled.Load() != 1 {
		t.Errorf("the slow copy was not cancelled")
	}
}

// A budget with no retry to give (0.001/s over 10s, and 0.1% of one first
// attempt) refuses the hedge: the call waits for its
// first copy; and a POST is never hedged.
func TestTransportHedgeWithinBudget(t *testing.T) {
	srv, hits, _ := slowFirst(t)
	e := outboundEngine(t, flow.Rule{ID: "rb", Resource: "GET " + testHost(srv.URL), Algorithm: flow.AlgoRetryBudget,
		Ratio: 0.001, MinPerSecond: 0.001})
	c := &http.Client{Transport: NewTransport(e, nil, WithHedging(5*time.Millisecond)), Timeout: 300 * time.Millisecond}
	if _, err := c.Get(srv.URL); err == nil {
		t.Fatal("GET answered: a hedge went out beyond the budget")
	}
	if got := hits.Load(); got != 1 {
		t.Errorf("backend saw %d calls, want 1 (no hedge)", got)
	}
	if got := e.Snapshot().Rules[0].Outbound.Refused; got != 1 {
		t.Errorf("budget refused %d, want the hedge", got)
	}
	hits.Store(1) // later calls answer at once
	resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := hits.Load(); got != 2 {
		t.Errorf("backend saw %d calls after the POST, want 2 (never hedged)", got-1)
	}
}
