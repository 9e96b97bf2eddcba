package browsertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// missingMessage is what a test says when no chromium can be found.
const missingMessage = "chromium not found; install it (apt-get install chromium) or run make test"

// Locate returns the chromium binary: CHROMIUM if set, else the first of
// chromium, chromium-browser, google-chrome on PATH. reason says why not,
// and fatal whether that must fail a test rather than skip it.
func Locate(getenv func(string) string, lookPath func(string) (string, error)) (path, reason string, fatal bool) {
	if p := getenv("CHROMIUM"); p != "" {
		found, err := lookPath(p)
		if err != nil {
			return "", "CHROMIUM=" + p + ": " + err.Error(), true
		}
		return found, "", false
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if found, err := lookPath(name); err == nil {
			return found, "", false
		}
	}
	return "", missingMessage, getenv("FLOWGATE_REQUIRE_BROWSER") == "1"
}

// Flags are the chromium flags used here: headless, as root in a container
// (no sandbox), and quiet (no GPU, QUIC, first-run, sync, background or
// component-update traffic).
var Flags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio"}

// Browser is a running headless chromium and its DevTools connection.
type Browser struct {
	proc *process
	ws   *wsConn

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply
	events  []Event
	readErr error
	done    chan struct{} // the reader ended
}

type reply struct {
	Result json.RawMessage
	Err    *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
}

// Event is one CDP event.
type Event struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
}

// Start launches chromium with a fresh profile, or skips (fails under
// FLOWGATE_REQUIRE_BROWSER=1) t when there is none. It is stopped, and its
// goroutines ended, when t ends.
func Start(t testing.TB) *Browser {
	t.Helper()
	path, reason, fatal := Locate(os.Getenv, exec.LookPath)
	switch {
	case fatal:
		t.Fatal(reason)
	case path == "":
		t.Skip(reason)
	}
	p, err := startProcess(path)
	if err != nil {
		t.Fatal(err)
	}
	var wsURL string
	select {
	case wsURL = <-p.found:
	case <-time.After(30 * time.Second):
		p.stop()
		t.Fatalf("chromium did not open DevTools within 30s; stderr:\n%s", p.stderrTail())
	}
	ws, err := dialWS(wsURL)
	if err != nil {
		p.stop()
		t.Fatalf("connecting to DevTools: %v", err)
	}
	b := &Browser{proc: p, ws: ws, pending: map[int64]chan reply{}, done: make(chan struct{})}
	go b.readLoop()
	t.Cleanup(func() {
		_ = b.ws.close()
		<-b.done
		p.stop()
	})
	return b
}

// process is a running chromium, its profile directory and the goroutine
// that reads its stderr.
type process struct {
	cmd     *exec.Cmd
	profile string
	found   chan string   // receives the DevTools address once chromium listens
	drained chan struct{} // closed when stderr has been read to its end

	mu   sync.Mutex
	tail []string // the last lines of stderr, for a failure message
}

// startProcess starts chromium at path with a fresh profile, listening
// for DevTools on a port of its choosing.
func startProcess(path string) (*process, error) {
	// The profile is removed by stop once every chromium process is gone
	// (t.TempDir's cleanup could race their last writes).
	profile, err := os.MkdirTemp("", "flowgate-chromium-")
	if err != nil {
		return nil, err
	}
	args := append(append([]string{}, Flags...), "--user-data-dir="+profile,
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--window-size=1280,1000", "about:blank")
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = sysProcAttr()
	stderr, err := cmd.StderrPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		_ = os.RemoveAll(profile)
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &process{cmd: cmd, profile: profile, found: make(chan string, 1), drained: make(chan struct{})}
	go p.readStderr(stderr)
	return p, nil
}

// readStderr sends the DevTools address chromium prints on stderr once it
// listens to p.found, and keeps the last lines of the rest of its chatter.
func (p *process) readStderr(stderr io.Reader) {
	defer close(p.drained)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if u, ok := strings.CutPrefix(line, "DevTools listening on "); ok {
			p.found <- strings.TrimSpace(u)
			continue
		}
		p.mu.Lock()
		if p.tail = append(p.tail, line); len(p.tail) > 20 {
			p.tail = p.tail[1:]
		}
		p.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, stderr)
}

func (p *process) stderrTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// stop kills chromium and its children, waits for them, and removes the
// profile.
func (p *process) stop() {
	killGroup(p.cmd)
	_ = p.cmd.Wait()
	<-p.drained
	// Killed children may still be exiting: retry briefly.
	for i := 0; i < 50 && os.RemoveAll(p.profile) != nil; i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *Browser) readLoop() {
	defer close(b.done)
	for {
		msg, err := b.ws.read()
		if err != nil {
			b.mu.Lock()
			b.readErr = err
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m struct {
			ID int64 `json:"id"`
			reply
			Event
		}
		if json.Unmarshal(msg, &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch := b.pending[m.ID]; ch != nil {
				ch <- m.reply
				delete(b.pending, m.ID)
			}
		} else if m.Method != "" {
			b.events = append(b.events, m.Event)
		}
		b.mu.Unlock()
	}
}

// call sends one command (to a page's session when session is not "") and
// decodes its result into out (when not nil).
func (b *Browser) call(ctx context.Context, session, method string, params, out any) error {
	ch := make(chan reply, 1)
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return fmt.Errorf("%s: DevTools connection: %w", method, b.readErr)
	}
	b.nextID++
	id := b.nextID
	b.pending[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params, "sessionId": session})
	if err != nil {
		return err
	}
	if session == "" {
		msg, _ = json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	}
	if err := b.ws.send(msg); err != nil {
		return err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: DevTools connection closed", method)
		}
		if r.Err != nil {
			return fmt.Errorf("%s: %s (%d)", method, r.Err.Message, r.Err.Code)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Events returns the events received so far for session.
func (b *Browser) Events(session string) []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Event
	for _, e := range b.events {
		if e.SessionID == session {
			out = append(out, e)
		}
	}
	return out
}

// ErrTimeout is returned by Page.WaitFor when the condition never held.
var ErrTimeout = errors.New("browsertest: condition not met in time")
