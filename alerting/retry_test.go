package alerting

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// withJitter makes the retry jitter draw the given values in turn (the
// last one from then on).
func withJitter(draws ...float64) HTTPOption {
	return func(h *httpConfig) {
		i := 0
		h.jitter = func() float64 {
			v := draws[min(i, len(draws)-1)]
			i++
			return v
		}
	}
}

// The default jitter keeps every sleep in the upper half of the wait and
// does not repeat one fixed schedule.
func TestWebhookSinkJitter(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 20 {
		clk := clock.NewFake(t0)
		srv := newHookServer(t, 503, 200)
		hook, err := NewWebhookSink(srv.URL, WithHTTPClock(clk), WithBackoff(time.Second, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := hook.Notify(context.Background(), testAlert()); err != nil {
			t.Fatal(err)
		}
		slept := clk.Now().Sub(t0)
		if slept < 500*time.Millisecond || slept >= time.Second {
			t.Fatalf("slept %v before the retry, want in [500ms, 1s)", slept)
		}
		seen[slept] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 senders all slept the same %v: no jitter", seen)
	}
}

// A 429 (or 503) with Retry-After, from a real HTTP server: the retry waits
// what the server asked, in seconds or as an HTTP date; a wait beyond the
// backoff's cap is not retried.
func TestWebhookSinkHonoursRetryAfter(t *testing.T) {
	clk := clock.NewFake(t0)
	var mu sync.Mutex
	var posts []time.Time
	answers := []func(w http.ResponseWriter){
		func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		},
		func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", clk.Now().Add(4*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		},
		func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) },
		func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		n := len(posts)
		posts = append(posts, clk.Now())
		mu.Unlock()
		answers[min(n, len(answers)-1)](w)
	}))
	t.Cleanup(srv.Close)
	hook, err := NewWebhookSink(srv.URL, WithHTTPClock(clk), WithBackoff(100*time.Millisecond, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := hook.Notify(context.Background(), testAlert()); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	mu.Lock()
	got := []time.Duration{posts[1].Sub(posts[0]), posts[2].Sub(posts[1])}
	mu.Unlock()
	if got[0] != 3*time.Second || got[1] != 4*time.Second {
		t.Errorf("waits between posts %v, want [3s 4s] (Retry-After in seconds, then as a date)", got)
	}
	err = hook.Notify(context.Background(), testAlert())
	var se *StatusError
	if !errors.As(err, &se) || se.RetryAfter != time.Hour || !strings.Contains(err.Error(), "1 attempts") {
		t.Errorf("Retry-After 3600 over a 10s cap: %v, want no retry and RetryAfter 1h", err)
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "0": 0, "-5": 0, "7": 7 * time.Second, " 2 ": 2 * time.Second, "soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}
