package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/judge"
)

// TestDemo runs the whole demo for 6 s of real traffic, in plain mode as CI
// sees it, and checks that its output shows what the demo is for: refusals
// at every level (read from its own /metrics scrape), the hot reload and the
// alert firing.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 6 s of real HTTP load")
	}
	// The traffic's shape depends on the process getting the CPU it asks
	// for: a run during which it was held off for long (a loaded machine)
	// cannot show every level's refusals, and is tried again.
	judge.Retry(t, 3, func(int) error {
		before := runtime.NumGoroutine()
		var buf bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		defer cancel()
		m := judge.Start(time.Millisecond)
		mon, err := run(ctx, cancel, config{duration: 6 * time.Second, plain: true, out: &buf, workers: 64})
		late := m.Stop()
		if err != nil {
			return fmt.Errorf("run: %v\n%s", err, buf.String())
		}
		out := buf.String()
		if p := demoShapeProblems(out, mon); len(p) > 0 {
			err := fmt.Errorf("%s\ndemo output:\n%s", strings.Join(p, "\n"), out)
			if late >= 100*time.Millisecond {
				return fmt.Errorf("the process woke up to %v late: %w: %w", late, judge.ErrUnjudged, err)
			}
			return err
		}
		if strings.Contains(out, "\x1b") {
			return errors.New("plain output contains an escape code")
		}
		// Everything the demo started has stopped: server, watcher,
		// alerter, workers, idle connections.
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // waiting for goroutines to exit, not for logic
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			return fmt.Errorf("%d goroutines after the run, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		return nil
	})
}

// demoShapeProblems lists what the demo's output fails to show of what it
// is for: refusals at every level (read from its own /metrics scrape and
// from the clients' 429 bodies), the hot reload, the alert firing, the
// shipping breaker opening and closing, the warm-up ramp.
func demoShapeProblems(out string, mon *monitor) []string {
	var p []string
	for _, level := range []string{"ip", "user", "global"} {
		re := regexp.MustCompile(`flowgate_requests_total\{level="` + level + `",resource="[^"]+",result="blocked"\} (\d+)`)
		var total int
		for _, m := range re.FindAllStringSubmatch(out, -1) {
			n, _ := strconv.Atoi(m[1])
			total += n
		}
		if total == 0 {
			p = append(p, "no blocks at level "+level+" in the scraped metrics")
		}
	}
	if !regexp.MustCompile(`reload applied: version [0-9a-f]{12} -> [0-9a-f]{12}`).MatchString(out) {
		p = append(p, "output has no reload line")
	}
	if !strings.Contains(out, `flowgate_rule_limit{level="user",resource="GET /api/products",rule="products-per-user"} 15`) {
		p = append(p, "scrape does not show the reloaded per-user limit (15)")
	}
	if !regexp.MustCompile(`ALERT FIRING +GET /api/`).MatchString(out) {
		p = append(p, "output has no alert firing line")
	}
	opened := strings.Index(out, "BREAKER OPEN   GET /api/shipping")
	closed := strings.Index(out, "breaker closed GET /api/shipping")
	if opened < 0 || closed < opened {
		p = append(p, "output does not show the shipping breaker opening, then closing")
	}
	if !regexp.MustCompile(`flowgate_breaker_transitions_total\{resource="GET /api/shipping",rule="shipping-carrier",to="open"\} [1-9]`).MatchString(out) ||
		!strings.Contains(out, `flowgate_breaker_state{resource="GET /api/shipping",rule="shipping-carrier"} 0`) {
		p = append(p, "scrape does not show the breaker's opening and its closed state at the end")
	}
	if !strings.Contains(out, "warm-up ramp on GET /api/recommendations") {
		p = append(p, "output has no warm-up ramp")
	}
	var ip, user uint64
	for _, a := range mon.sc.actors {
		ip += a.blocked[flow.LevelIP].Load()
		user += a.blocked[flow.LevelUser].Load()
	}
	if ip == 0 || user == 0 {
		p = append(p, fmt.Sprintf("clients counted 429s at ip %d, user %d; want both > 0", ip, user))
	}
	// The open shipping breaker's 503s are counted as the breaker's, not
	// as a level's 429s.
	var broken uint64
	for _, a := range mon.sc.actors {
		broken += a.broken.Load()
	}
	if broken == 0 {
		p = append(p, "clients counted no breaker 503s while the shipping breaker was open")
	}
	if !regexp.MustCompile(`client +sent +ok +ip +user +global +breaker`).MatchString(out) {
		p = append(p, "the clients' table has no breaker column")
	}
	return p
}

// TestScreen checks both output modes on a frame: plain has no escape
// codes; the terminal mode redraws in place and fits a short terminal.
func TestScreen(t *testing.T) {
	f := frame{elapsed: 3 * time.Second, total: 6 * time.Second, phase: phase(0.5),
		resources: []resRow{{name: resProducts, passed: 10}}, stable: 100, cold: 33,
		events: []event{{time.Second, "one"}, {2 * time.Second, "two"}}}

	var plain bytes.Buffer
	p := newScreen(&plain, true)
	p.frame(f, false)
	p.frame(f, true)
	if strings.Contains(plain.String(), "\x1b") {
		t.Errorf("plain mode wrote an escape code:\n%q", plain.String())
	}
	if got := strings.Count(plain.String(), "] two"); got != 1 {
		t.Errorf("plain mode printed event %q %d times, want 1", "two", got)
	}

	var tty bytes.Buffer
	s := newScreen(&tty, false)
	const height = 20
	s.size = func() (int, int) { return 80, height }
	s.frame(f, false)
	first := s.lines
	s.frame(f, false)
	if first == 0 || first > height-1 {
		t.Errorf("table is %d lines on a %d-line terminal", first, height)
	}
	if want := "\x1b[" + strconv.Itoa(first) + "F\x1b[J"; !strings.Contains(tty.String(), want) {
		t.Errorf("second frame does not move back %d lines (%q)", first, want)
	}
}

// TestTableFits80Columns draws a busy frame for an 80-column terminal: no
// line may be wider (a wrapped line breaks the in-place redraw), and a long
// event wraps instead of losing its end.
func TestTableFits80Columns(t *testing.T) {
	long := "ALERT FIRING  GET /api/products: 42% of calls refused over the last 2s (> 30%)"
	f := frame{elapsed: 13 * time.Second, total: 20 * time.Second, phase: phase(0.6),
		resources: []resRow{{name: resProducts, passed: 123456, waited: 12345, admitRate: 250, blockRate: 99}},
		actors:    []actorRow{{name: "flash sale, 60 users", sent: 9999, ok: 8888}},
		stable:    100, cold: 33, window: 2 * time.Second, threshold: 0.3, forDur: time.Second,
		states:  []alerting.ResourceState{{Resource: resProducts, State: alerting.Firing, Ratio: 0.42}},
		version: "45f77a909dd845f77a909dd8", userLimit: 15,
		events: []event{{time.Second, long}, {2 * time.Second, "reload applied: version 45f77a909dd8 -> 0123456789ab (rules file edited)"}}}
	for _, ascii := range []bool{false, true} {
		lines := table(f, ascii, 0, 80)
		var all strings.Builder
		for _, l := range lines {
			if n := visibleLen(l); n > 80 {
				t.Errorf("ascii %v: line of %d columns: %q", ascii, n, l)
			}
			all.WriteString(strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(l, red, ""), "\x1b[0m", "")) + " ")
		}
		if !ascii && !strings.Contains(all.String(), "(> 30%)") {
			t.Errorf("the alert event lost its end:\n%s", strings.Join(lines, "\n"))
		}
	}
	var intro bytes.Buffer
	fw := &fitWriter{out: &intro, width: 80}
	printIntro(fw, []flow.Rule{{ID: "products-per-user", Resource: "GET /api/products", Level: flow.LevelUser,
		Algorithm: flow.AlgoTokenBucket, Limit: 5, Burst: 10, Window: time.Second}}, 20*time.Second)
	for _, l := range strings.Split(strings.TrimRight(intro.String(), "\n"), "\n") {
		if n := visibleLen(l); n > 80 {
			t.Errorf("intro line of %d columns: %q", n, l)
		}
	}
}

// /dev/null is a character device but no terminal: the demo must not draw
// escape codes into it.
func TestDevNullIsNotATerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no %s: %v", os.DevNull, err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Errorf("isTerminal(%s) = true", os.DevNull)
	}
	if w, h := termSize(f); w != 0 || h != 0 {
		t.Errorf("termSize(%s) = %d, %d; want 0, 0", os.DevNull, w, h)
	}
}
