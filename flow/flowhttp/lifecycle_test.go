package flowhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// queueEngine allows one call per second and lets one more queue for the
// next second (MaxWait), on a clock whose Sleep blocks until cancelled.
func queueEngine(t *testing.T) (*flow.Engine, *blockingClock) {
	clk := &blockingClock{Fake: clock.NewFake(epoch), sleeping: make(chan time.Duration, 1)}
	eng := newEngine(t, clk, flow.Rule{ID: "q", Resource: "GET /slow", Algorithm: flow.AlgoFixedWindow,
		Limit: 1, Window: time.Second, MaxWait: 2 * time.Second})
	return eng, clk
}

func TestClientCancelsQueuedWait(t *testing.T) {
	eng, clk := queueEngine(t)
	ok := &okHandler{}
	h := Middleware(eng)(ok)
	if w := serve(h, "GET", "/slow", peerAddr, nil); w.Code != 200 {
		t.Fatalf("first: %d", w.Code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest("GET", "/slow", nil).WithContext(ctx)
	w := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, r)
	}()
	if d := recv(t, clk.sleeping); d != time.Second {
		t.Errorf("queued for %v, want 1s (to the next window)", d)
	}
	cancel() // the client hangs up mid-wait
	recv(t, done)
	if w.Code != StatusClientClosedRequest {
		t.Errorf("status %d, want %d", w.Code, StatusClientClosedRequest)
	}
	if ok.calls != 1 {
		t.Errorf("handler ran %d times, want 1: the cancelled request must not run", ok.calls)
	}
	// The slot it had reserved was given back: the next window holds one
	// call again, and it passes without queueing.
	clk.Advance(time.Second)
	if w := serve(h, "GET", "/slow", peerAddr, nil); w.Code != 200 {
		t.Errorf("next window: %d, want 200", w.Code)
	}
	if got := resourceStats(t, eng, "GET /slow").Blocked[flow.LevelGlobal]; got != 1 {
		t.Errorf("blocked = %d, want the 1 cancelled wait", got)
	}
}

func TestAlreadyCancelledRequestDoesNotQueue(t *testing.T) {
	eng, _ := queueEngine(t)
	h := Middleware(eng)(&okHandler{})
	serve(h, "GET", "/slow", peerAddr, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest("GET", "/slow", nil).WithContext(ctx)
	w := httptest.NewRecorder()
	// The wait ends at once: the context is done before it starts.
	h.ServeHTTP(w, r)
	if w.Code != StatusClientClosedRequest {
		t.Errorf("status %d, want %d", w.Code, StatusClientClosedRequest)
	}
}

// Over a real connection: the client hangs up while queued, the server's
// request context is cancelled, and the middleware stops waiting.
func TestClientHangsUpOverTheWire(t *testing.T) {
	eng, clk := queueEngine(t)
	returned := make(chan int, 2)
	mw := Middleware(eng)(&okHandler{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusWriter{ResponseWriter: w}
		mw.ServeHTTP(rec, r)
		returned <- rec.status
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s := recv(t, returned); s != 200 {
		t.Fatalf("first: %d", s)
	}

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/slow", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	recv(t, clk.sleeping) // the second request is queued on the server
	cancel()
	if err := recv(t, errc); !errors.Is(err, context.Canceled) {
		t.Errorf("client error %v, want context.Canceled", err)
	}
	if s := recv(t, returned); s != StatusClientClosedRequest {
		t.Errorf("server side status %d, want %d", s, StatusClientClosedRequest)
	}
}

func TestPanicReleasesConcurrencyPermit(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "one-at-a-time", Resource: "GET /p",
		Algorithm: flow.AlgoConcurrency, Limit: 1})
	boom := errors.New("boom")
	panicking := Middleware(eng)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(boom) }))
	func() {
		defer func() {
			if v := recover(); v != boom {
				t.Errorf("recovered %v, want the handler's own panic value", v)
			}
		}()
		serve(panicking, "GET", "/p", peerAddr, nil)
	}()
	if n := eng.InFlight(); n != 0 {
		t.Fatalf("in flight after panic = %d, want 0", n)
	}
	if w := serve(Middleware(eng)(&okHandler{}), "GET", "/p", peerAddr, nil); w.Code != 200 {
		t.Fatalf("after panic: %d, want 200 (permit released)", w.Code)
	}
	rs := resourceStats(t, eng, "GET /p")
	if rs.Errors != 1 || rs.Completed != 2 {
		t.Errorf("errors %d completed %d, want 1 and 2", rs.Errors, rs.Completed)
	}
}

func TestConcurrencyBlockedWhileHeld(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "c", Resource: "GET /c",
		Algorithm: flow.AlgoConcurrency, Limit: 1})
	var inner *httptest.ResponseRecorder
	h := Middleware(eng)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner = serve(Middleware(eng)(&okHandler{}), "GET", "/c", peerAddr, nil)
	}))
	serve(h, "GET", "/c", peerAddr, nil)
	if inner.Code != 429 {
		t.Fatalf("second in flight: %d, want 429", inner.Code)
	}
	wantHeaders(t, inner.Header(), map[string]string{"Retry-After": "", "RateLimit-Policy": `"c";q=1`, "RateLimit": `"c";r=0`})
}

func TestServerErrorRecorded(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "r", Resource: "GET /e", Algorithm: flow.AlgoFixedWindow, Limit: 100})
	for _, code := range []int{200, 404, 500, 503, 201} {
		code := code
		h := Middleware(eng)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }))
		if w := serve(h, "GET", "/e", peerAddr, nil); w.Code != code {
			t.Fatalf("status %d, want %d", w.Code, code)
		}
	}
	rs := resourceStats(t, eng, "GET /e")
	if rs.Errors != 2 || rs.Completed != 5 {
		t.Errorf("errors %d completed %d, want 2 (500, 503) and 5", rs.Errors, rs.Completed)
	}
	if got := StatusError(503).Error(); got != "flowhttp: handler answered 503 Service Unavailable" {
		t.Errorf("StatusError = %q", got)
	}
}

func TestHeadBlockedHasNoBody(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "r", Resource: "HEAD /h", Algorithm: flow.AlgoFixedWindow, Limit: 1})
	h := Middleware(eng)(&okHandler{})
	serve(h, "HEAD", "/h", peerAddr, nil)
	w := serve(h, "HEAD", "/h", peerAddr, nil)
	if w.Code != 429 || w.Body.Len() != 0 {
		t.Errorf("HEAD blocked: %d with %d body bytes, want 429 and none", w.Code, w.Body.Len())
	}
}

func TestWriterKeepsFlusher(t *testing.T) {
	h := Middleware(newEngine(t, clock.NewFake(epoch)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := w.(http.Flusher)
		if !ok {
			t.Error("wrapped writer is not an http.Flusher")
			return
		}
		_, _ = w.Write([]byte("a"))
		f.Flush()
		if err := http.NewResponseController(w).SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
			t.Errorf("ResponseController: %v", err)
		}
	}))
	w := serve(h, "GET", "/", peerAddr, nil)
	if !w.Flushed {
		t.Error("Flush did not reach the recorder")
	}
}

// readerFromRecorder is a recorder that also implements io.ReaderFrom, as
// the server's own ResponseWriter does.
type readerFromRecorder struct {
	*httptest.ResponseRecorder
	readFrom int
}

func (r *readerFromRecorder) ReadFrom(src io.Reader) (int64, error) {
	r.readFrom++
	return io.Copy(struct{ io.Writer }{r.ResponseRecorder}, src)
}

func TestWriterKeepsReaderFrom(t *testing.T) {
	h := Middleware(newEngine(t, clock.NewFake(epoch)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A LimitedReader has no WriteTo, so io.Copy must use w's ReadFrom.
		if _, err := io.Copy(w, io.LimitReader(strings.NewReader("payload"), 100)); err != nil {
			t.Error(err)
		}
	}))
	rec := &readerFromRecorder{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.readFrom != 1 || rec.Body.String() != "payload" || rec.Code != 200 {
		t.Errorf("ReadFrom calls %d, body %q, code %d; want 1, payload, 200", rec.readFrom, rec.Body, rec.Code)
	}
	// Without ReaderFrom underneath, the copy still works.
	plain := httptest.NewRecorder()
	h.ServeHTTP(plain, httptest.NewRequest("GET", "/", nil))
	if plain.Body.String() != "payload" {
		t.Errorf("body %q, want payload", plain.Body)
	}
}
