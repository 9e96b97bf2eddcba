package flowhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newEngine returns an engine on clk holding rules.
func newEngine(t testing.TB, clk clock.Clock, rules ...flow.Rule) *flow.Engine {
	t.Helper()
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules(rules); err != nil {
		t.Fatalf("LoadRules: %v", err)
	}
	return eng
}

// serve runs one request from remote through h and returns the recorder.
func serve(h http.Handler, method, target, remote string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	if remote != "" {
		r.RemoteAddr = remote
	}
	for k, vs := range header {
		r.Header[k] = vs
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// okHandler answers 200 "ok" and counts its calls.
type okHandler struct{ calls int }

func (h *okHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.calls++
	_, _ = w.Write([]byte("ok"))
}

// wantHeaders checks every listed header's exact value; "" means absent.
func wantHeaders(t *testing.T, h http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, present := h[http.CanonicalHeaderKey(k)]
		switch {
		case v == "" && present:
			t.Errorf("%s = %q, want it absent", k, got)
		case v != "" && (len(got) != 1 || got[0] != v):
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// blockingClock is a Fake whose Sleep blocks until its context is done, so a
// test can hold a request in a queued wait and then hang up.
type blockingClock struct {
	*clock.Fake
	sleeping chan time.Duration // receives each wait as it starts
}

func (c *blockingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeping <- d
	<-ctx.Done()
	return ctx.Err()
}

func resourceStats(t *testing.T, eng *flow.Engine, name string) flow.ResourceStats {
	t.Helper()
	for _, rs := range eng.Snapshot().Resources {
		if rs.Resource == name {
			return rs
		}
	}
	t.Fatalf("no statistics for resource %q", name)
	return flow.ResourceStats{}
}

// recv takes the next value from ch. The deadline only turns a lost
// wake-up into a failure instead of a hung test; no logic waits on it.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing received within 10s")
		panic("unreachable")
	}
}
