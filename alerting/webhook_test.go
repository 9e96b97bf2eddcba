package alerting

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// amWebhook is Alertmanager's webhook payload as a receiver decodes it,
// written from Alertmanager's documentation, independent of webhook.go.
type amWebhook struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   *int              `json:"truncatedAlerts"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []struct {
		Status       string            `json:"status"`
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     string            `json:"startsAt"`
		EndsAt       string            `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL"`
		Fingerprint  string            `json:"fingerprint"`
	} `json:"alerts"`
}

// hookServer records request bodies and answers with the queued statuses,
// then 200.
type hookServer struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	statuses []int
}

func newHookServer(t *testing.T, statuses ...int) *hookServer {
	h := &hookServer{statuses: statuses}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, body)
		h.headers = append(h.headers, r.Header.Clone())
		code := http.StatusOK
		if len(h.statuses) > 0 {
			code, h.statuses = h.statuses[0], h.statuses[1:]
		}
		h.mu.Unlock()
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			code = http.StatusBadRequest
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) requests() ([][]byte, []http.Header) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.bodies...), append([]http.Header(nil), h.headers...)
}

func TestWebhookSinkSendsV4Payloads(t *testing.T) {
	srv := newHookServer(t)
	hook, err := NewWebhookSink(srv.URL+"/hook?token=s3cret",
		WithReceiver("ops"), WithExternalURL("http://shop.example:8080"),
		WithGeneratorURL("http://grafana.example/d/flowgate-overview"),
		WithAuthorization("Bearer t0ken"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, []flow.Rule{fixedWindow("GET /orders", 10, time.Second)}, WithSink(hook))
	for range 4 {
		r.tick(map[string]int{"GET /orders": 20})
	}
	for range 12 {
		r.tick(map[string]int{"GET /orders": 5})
	}
	recorded := r.rec.all()
	bodies, headers := srv.requests()
	if len(bodies) != 2 || len(recorded) != 2 {
		t.Fatalf("webhook got %d posts, recorder %d notifications; want 2 each (firing, resolved)", len(bodies), len(recorded))
	}
	for i, body := range bodies {
		a := recorded[i]
		if got := headers[i].Get("Authorization"); got != "Bearer t0ken" {
			t.Errorf("post %d: Authorization = %q", i, got)
		}
		var m amWebhook
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("post %d: %v\n%s", i, err, body)
		}
		wantLabels := map[string]string{"alertname": DefaultName, "resource": "GET /orders", "severity": "warning"}
		wantGroup := map[string]string{"alertname": DefaultName, "resource": "GET /orders"}
		if m.Version != "4" || m.Status != a.Status || m.Receiver != "ops" ||
			m.ExternalURL != "http://shop.example:8080" || m.TruncatedAlerts == nil || *m.TruncatedAlerts != 0 {
			t.Errorf("post %d header fields: %+v", i, m)
		}
		if want := `{}:{alertname="FlowgateHighRejectionRatio", resource="GET /orders"}`; m.GroupKey != want {
			t.Errorf("post %d: groupKey = %s, want %s", i, m.GroupKey, want)
		}
		if !reflect.DeepEqual(m.GroupLabels, wantGroup) || !reflect.DeepEqual(m.CommonLabels, wantLabels) ||
			!reflect.DeepEqual(m.CommonAnnotations, a.Annotations) {
			t.Errorf("post %d: group %v common %v annotations %v", i, m.GroupLabels, m.CommonLabels, m.CommonAnnotations)
		}
		if len(m.Alerts) != 1 {
			t.Fatalf("post %d: %d alerts, want 1", i, len(m.Alerts))
		}
		al := m.Alerts[0]
		wantEnds := "0001-01-01T00:00:00Z"
		if a.Status == StatusResolved {
			wantEnds = a.EndsAt.UTC().Format(time.RFC3339Nano)
		}
		if al.Status != a.Status || !reflect.DeepEqual(al.Labels, wantLabels) || !reflect.DeepEqual(al.Annotations, a.Annotations) ||
			al.StartsAt != a.StartsAt.UTC().Format(time.RFC3339Nano) || al.EndsAt != wantEnds ||
			al.GeneratorURL != "http://grafana.example/d/flowgate-overview" || al.Fingerprint != a.Fingerprint() ||
			len(al.Fingerprint) != 16 {
			t.Errorf("post %d alert: %+v\nfrom %+v", i, al, a)
		}
		if _, err := time.Parse(time.RFC3339, al.StartsAt); err != nil {
			t.Errorf("startsAt: %v", err)
		}
	}
	if want := []string{StatusFiring, StatusResolved}; recorded[0].Status != want[0] || recorded[1].Status != want[1] {
		t.Errorf("statuses %s, %s, want firing, resolved", recorded[0].Status, recorded[1].Status)
	}
}

func testAlert() Alert {
	return Alert{Name: DefaultName, Resource: "r", Status: StatusFiring, Ratio: 0.5, StartsAt: t0, UpdatedAt: t0,
		Labels: map[string]string{"alertname": DefaultName, "resource": "r"}}
}

func TestWebhookSinkRetries(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := newHookServer(t, 500, 503, 200)
	// Jitter draws 0 then 0.5: sleeps of half the wait, then three quarters.
	hook, err := NewWebhookSink(srv.URL, WithHTTPClock(clk), WithBackoff(time.Second, 10*time.Second), withJitter(0, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	if err := hook.Notify(context.Background(), testAlert()); err != nil {
		t.Fatalf("Notify after two 5xx: %v", err)
	}
	bodies, _ := srv.requests()
	if len(bodies) != 3 || !bytes.Equal(bodies[0], bodies[2]) {
		t.Fatalf("got %d posts, want 3 identical", len(bodies))
	}
	if clk.Sleeps() != 2 || !clk.Now().Equal(t0.Add(2*time.Second)) {
		t.Errorf("backoff: %d sleeps to %v, want 2 (0.5s of 1s, 1.5s of 2s)", clk.Sleeps(), clk.Now().Sub(t0))
	}

	// 4xx is the request's fault: no retry.
	srv = newHookServer(t, 400)
	hook, _ = NewWebhookSink(srv.URL, WithHTTPClock(clk))
	err = hook.Notify(context.Background(), testAlert())
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 {
		t.Fatalf("Notify = %v, want a *StatusError 400", err)
	}
	if bodies, _ := srv.requests(); len(bodies) != 1 {
		t.Errorf("400: %d posts, want 1", len(bodies))
	}

	// 429 asks to come back later: retried.
	srv = newHookServer(t, 429, 200)
	hook, _ = NewWebhookSink(srv.URL, WithHTTPClock(clk))
	if err := hook.Notify(context.Background(), testAlert()); err != nil {
		t.Fatalf("429 then 200: %v", err)
	}
	if bodies, _ := srv.requests(); len(bodies) != 2 {
		t.Errorf("429: %d posts, want 2", len(bodies))
	}

	// A cancelled context stops the backoff.
	srv = newHookServer(t, 500, 500)
	hook, _ = NewWebhookSink(srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := hook.Notify(ctx, testAlert()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Notify = %v, want context.Canceled", err)
	}

	// Always 500: retries, then the last error.
	srv = newHookServer(t, 500, 500, 500, 500, 500)
	hook, _ = NewWebhookSink(srv.URL, WithHTTPClock(clk), WithRetries(2))
	err = hook.Notify(context.Background(), testAlert())
	if !errors.As(err, &se) || se.StatusCode != 500 || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("Notify = %v, want 500 after 3 attempts", err)
	}
}

func TestWebhookSinkKeepsSecretsOutOfErrorsAndLogs(t *testing.T) {
	srv := newHookServer(t)
	srv.Close() // every attempt fails to connect
	clk := clock.NewFake(t0)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	raw := strings.Replace(srv.URL, "http://", "http://user:pa55word@", 1) + "/hook?token=s3cret"
	hook, err := NewWebhookSink(raw, WithHTTPClock(clk), WithHTTPLogger(log), WithAuthorization("Bearer t0ken"))
	if err != nil {
		t.Fatal(err)
	}
	err = hook.Notify(context.Background(), testAlert())
	if err == nil {
		t.Fatal("Notify to a closed server succeeded")
	}
	// Through an alerter too, so its failure log is checked.
	r := newRig(t, []flow.Rule{fixedWindow("orders", 10, time.Second)}, WithSink(hook), WithLogger(log), WithFor(0))
	r.tick(map[string]int{"orders": 20})
	if st := r.al.Stats(); st.Failed != 1 || st.Sent != 1 {
		t.Errorf("Stats = %+v, want the webhook failed once and the recorder got it", st)
	}
	text := err.Error() + "\n" + logs.String() + hook.String()
	for _, secret := range []string{"pa55word", "s3cret", "t0ken"} {
		if strings.Contains(text, secret) {
			t.Errorf("%q leaked:\n%s", secret, text)
		}
	}
	if !strings.Contains(text, "REDACTED@") || !strings.Contains(logs.String(), "sink failed") ||
		strings.Count(logs.String(), "retrying") != 2*DefaultRetries {
		t.Errorf("want redacted URL, %d retry logs and a sink failure logged:\n%s", 2*DefaultRetries, text)
	}
	if clk.Sleeps() != 2*DefaultRetries {
		t.Errorf("network errors: %d backoff sleeps, want %d", clk.Sleeps(), 2*DefaultRetries)
	}
	if _, err := NewWebhookSink("ftp://user:pa55word@host/x"); err == nil || strings.Contains(err.Error(), "pa55word") {
		t.Errorf("bad URL: %v", err)
	}
}

func TestAlertmanagerSinkPushesV2Alerts(t *testing.T) {
	var paths []string
	var mu sync.Mutex
	srv := newHookServer(t)
	inner := srv.Config.Handler
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		inner.ServeHTTP(w, r)
	})
	am, err := NewAlertmanagerSink(srv.URL+"/am/", WithGeneratorURL("http://grafana.example/d/x"))
	if err != nil {
		t.Fatal(err)
	}
	if am.RepeatInterval() != time.Minute {
		t.Fatalf("RepeatInterval = %v, want 1m", am.RepeatInterval())
	}
	r := newRig(t, []flow.Rule{fixedWindow("orders", 10, time.Second)}, WithSink(am))
	for range 4 + 12 { // fires at 40s; 2 more minutes: re-pushed each minute (not each 4h)
		r.tick(map[string]int{"orders": 20})
	}
	for range 12 {
		r.tick(map[string]int{"orders": 5})
	}
	bodies, _ := srv.requests()
	if len(bodies) != 4 || len(r.rec.all()) != 2 {
		t.Fatalf("pushes = %d, recorder = %d; want 3 firing + 1 resolved pushes, firing + resolved recorded", len(bodies), len(r.rec.all()))
	}
	type postable struct {
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     time.Time         `json:"startsAt"`
		EndsAt       time.Time         `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL"`
	}
	startsAt := r.rec.all()[0].StartsAt
	resolvedAt := r.rec.all()[1].EndsAt
	for i, body := range bodies {
		var got []postable
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil || len(got) != 1 {
			t.Fatalf("push %d: %v, %d alerts\n%s", i, err, len(got), body)
		}
		p := got[0]
		if paths[i] != "/am/api/v2/alerts" || p.Labels["alertname"] != DefaultName || p.Labels["resource"] != "orders" ||
			p.Annotations["summary"] == "" || !p.StartsAt.Equal(startsAt) || p.GeneratorURL != "http://grafana.example/d/x" {
			t.Errorf("push %d to %s: %+v", i, paths[i], p)
		}
		if i < 3 {
			pushedAt := startsAt.Add(30*time.Second + time.Duration(i)*time.Minute)
			if want := pushedAt.Add(4 * time.Minute); !p.EndsAt.Equal(want) {
				t.Errorf("firing push %d: endsAt %v, want %v (4 resend intervals on)", i, p.EndsAt, want)
			}
		} else if !p.EndsAt.Equal(resolvedAt) {
			t.Errorf("resolved push: endsAt %v, want %v", p.EndsAt, resolvedAt)
		}
	}
}
