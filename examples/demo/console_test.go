package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/internal/testing/browsertest"
)

// syncBuffer is the demo's output, read while the demo writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDemoConsole opens the console URL the demo prints in a real headless
// chromium while the demo's load runs, and checks that it shows the story:
// a chart per resource, the abusive IP at the top of its rule's blocked
// keys, and no page error. With FLOWGATE_DEMO_SCREENSHOT=file it saves the
// page as a PNG there (how examples/demo/console.png was made).
func TestDemoConsole(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 20 s of real HTTP load")
	}
	b := browsertest.Start(t)
	out := &syncBuffer{}
	// The demo runs long enough for a slow (loaded) machine to meet every
	// condition below; the test stops it as soon as they are met.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, cancel, config{duration: 90 * time.Second, plain: true, out: out, workers: 64})
		done <- err
	}()
	defer func() {
		cancel()
		<-done
	}()
	re := regexp.MustCompile(`console: (http://\S+/flowgate/)`)
	var url string
	for deadline := time.Now().Add(20 * time.Second); url == ""; {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("the demo printed no console URL:\n%s", out.String())
		} else {
			time.Sleep(20 * time.Millisecond) // waiting for the demo's intro
		}
	}
	p, err := b.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(url); err != nil {
		t.Fatal(err)
	}
	// Polls at the default 1 s: a rate point per chart from the second on.
	for _, cond := range []string{
		`window.fg.updates >= 8`,
		`document.querySelectorAll("#resources svg.chart").length >= 3 &&
			[...document.querySelectorAll("#resources svg.chart")].every(s => Number(s.dataset.points) >= 5)`,
		`document.querySelector('#topkeys table[data-rule="products-per-ip"] tr[data-key]')?.dataset.key === "203.0.113.66"`,
	} {
		if err := p.WaitFor(cond, 30*time.Second); err != nil {
			var state string
			_ = p.Eval(`JSON.stringify({updates: window.fg.updates, status: document.getElementById("status").textContent,
				charts: [...document.querySelectorAll("#resources svg.chart")].map(s => s.dataset.points)})`, &state)
			t.Fatalf("%v\npage state: %s\nconsole errors: %q\ndemo output:\n%s", err, state, p.ConsoleErrors(), out.String())
		}
	}
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Fatalf("the console reported errors: %q", errs)
	}
	if path := os.Getenv("FLOWGATE_DEMO_SCREENSHOT"); path != "" {
		png, err := p.Screenshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", path, len(png))
	}
}
