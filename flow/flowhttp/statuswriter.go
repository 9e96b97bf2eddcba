package flowhttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
)

// statusWriter remembers the status a handler sent, so that a 5xx can be
// recorded as an error on the permit. It keeps http.ResponseController
// working through Unwrap, and answers the two optional interfaces old
// handlers assert directly (Flusher, Hijacker) by delegating.
type statusWriter struct {
	http.ResponseWriter
	status int // 0 until the final (non-1xx) status is known
	// cost is the actual cost the handler reported with SetCost.
	cost    int
	costSet bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush flushes when the underlying writer can; streaming handlers assert
// http.Flusher directly, so the wrapper must not hide it.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands over the connection when the underlying writer can
// (HTTP/1); it returns http.ErrNotSupported otherwise.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// ReadFrom keeps the underlying writer's io.ReaderFrom (sendfile for
// http.ServeContent and io.Copy) reachable through the wrapper.
func (w *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{w.ResponseWriter}, r)
}

// writerOnly hides every method but Write, so io.Copy cannot loop back
// into ReadFrom.
type writerOnly struct{ io.Writer }
