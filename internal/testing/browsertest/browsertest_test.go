package browsertest

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestLocate(t *testing.T) {
	none := func(string) (string, error) { return "", exec.ErrNotFound }
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, reason, fatal := Locate(env(nil), none); fatal || !strings.Contains(reason, "apt-get install chromium") {
		t.Errorf("missing: got %q fatal %v, want a skip naming the package", reason, fatal)
	}
	if _, _, fatal := Locate(env(map[string]string{"FLOWGATE_REQUIRE_BROWSER": "1"}), none); !fatal {
		t.Error("missing under FLOWGATE_REQUIRE_BROWSER=1: want fatal")
	}
	if _, _, fatal := Locate(env(map[string]string{"CHROMIUM": "/nope"}), none); !fatal {
		t.Error("CHROMIUM naming a missing file: want fatal")
	}
	found := func(n string) (string, error) {
		if n == "chromium-browser" {
			return "/usr/bin/chromium-browser", nil
		}
		return "", errors.New("no")
	}
	if p, _, _ := Locate(env(nil), found); p != "/usr/bin/chromium-browser" {
		t.Errorf("got %q, want the second name on PATH", p)
	}
}

func TestPageRoundTrip(t *testing.T) {
	b := Start(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><link rel="icon" href="data:,"><p id=x>hello</p><script>console.error("boom " + 6*7)</script>`))
	}))
	defer srv.Close()
	p, err := b.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(srv.URL); err != nil {
		t.Fatal(err)
	}
	var text string
	if err := p.Eval(`document.getElementById("x").textContent`, &text); err != nil || text != "hello" {
		t.Fatalf("Eval: got %q, %v; want hello", text, err)
	}
	if err := p.WaitFor(`false`, 100*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Errorf("WaitFor(false): got %v, want ErrTimeout", err)
	}
	if err := p.WaitFor(`true`, time.Second); err != nil {
		t.Errorf("WaitFor(true): %v", err)
	}
	errs := p.ConsoleErrors()
	if len(errs) != 1 || !strings.Contains(errs[0], "boom 42") {
		t.Errorf("console errors: got %q, want the one console.error", errs)
	}
	png, err := p.Screenshot()
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Errorf("Screenshot: %d bytes, %v", len(png), err)
	}
}
