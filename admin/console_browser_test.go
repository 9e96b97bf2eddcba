package admin_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/browsertest"
	"github.com/flowgate/flowgate/rules"
)

const consoleDoc = `{"rules": [
  {"id": "orders-per-user", "resource": "GET /orders", "level": "user", "algorithm": "fixed_window", "limit": 20, "window": "1m"},
  {"id": "orders", "resource": "GET /orders", "algorithm": "token_bucket", "limit": 150},
  {"id": "pay-per-ip", "resource": "POST /pay", "level": "ip", "algorithm": "sliding_window", "limit": 30, "window": "10s"},
  {"id": "pay-breaker", "resource": "POST /pay", "algorithm": "circuit_breaker", "strategy": "error_ratio",
   "threshold": 0.5, "minRequests": 10, "window": "5s", "openFor": "2s", "probes": 1}
]}`

var errPaymentDown = errors.New("payment provider down")

// load drives eng until stop is closed: every 20ms of real time, a batch
// of calls from a few users and IPs (alice and 10.0.0.66 far above their
// limits), then 100ms of the engine's fake clock, so the console's rates
// are on the engine's time and the figures do not depend on the machine.
func load(eng *flow.Engine, clk *clock.Fake, stop <-chan struct{}) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	users := []string{"alice", "alice", "alice", "alice", "bob", "carol"}
	ips := []string{"10.0.0.66", "10.0.0.66", "10.0.0.66", "192.0.2.7"}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for j := range 24 {
			if p, err := eng.Entry("GET /orders", flow.WithUser(users[j%len(users)])); err == nil {
				p.Exit()
			}
			if p, err := eng.Entry("POST /pay", flow.WithIP(ips[j%len(ips)])); err == nil {
				// Payments fail in bursts: the breaker opens, probes, closes.
				if (i/40)%2 == 1 {
					p.Exit(flow.WithError(errPaymentDown))
				} else {
					p.Exit()
				}
			}
		}
		clk.Advance(100 * time.Millisecond)
	}
}

// TestConsoleInBrowser drives the console page in a real headless chromium
// against an engine under load: the charts render, the numbers shown match
// the engine's snapshot, a reset through the form takes effect, and the
// page reports no error.
func TestConsoleInBrowser(t *testing.T) {
	b := browsertest.Start(t)

	clk := clock.NewFake(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	eng := flow.NewEngine(flow.WithClock(clk))
	d, err := rules.Parse([]byte(consoleDoc))
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.LoadRules(d.Rules()); err != nil {
		t.Fatal(err)
	}
	const poll = 250 * time.Millisecond
	mux := http.NewServeMux()
	mux.Handle("/flowgate/", http.StripPrefix("/flowgate", admin.New(eng, admin.WithWriteToken("s3cret"), admin.WithPollInterval(poll))))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { load(eng, clk, stop) })
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopLoad()

	p, err := b.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Navigate(srv.URL + "/flowgate/"); err != nil {
		t.Fatal(err)
	}
	loaded := time.Since(start)
	must(t, p.WaitFor(`window.fg.updates >= 1`, 10*time.Second))
	firstData := time.Since(start)
	var navMs float64
	must(t, p.Eval(`performance.getEntriesByType("navigation")[0].loadEventEnd`, &navMs))

	// Charts: one per resource, each with at least 5 rate points and a
	// line of non-zero extent.
	must(t, p.WaitFor(`(() => {
		const svgs = [...document.querySelectorAll("#resources svg.chart")];
		return svgs.length === 2 && svgs.every(s => Number(s.dataset.points) >= 5 &&
			s.querySelector("polyline.admitted").getBBox().width > 0 &&
			s.querySelector("polyline.blocked").getBBox().width > 0);
	})()`, 20*time.Second))
	var upd0 int
	must(t, p.Eval(`window.fg.updates`, &upd0))
	t0 := time.Now()
	must(t, p.WaitFor(`window.fg.updates >= `+strconv.Itoa(upd0+8), 20*time.Second))
	interval := time.Since(t0) / 8

	// Top keys: alice and 10.0.0.66 lead their rules.
	must(t, p.WaitFor(`(() => {
		const first = (rule) => document.querySelector('#topkeys table[data-rule="' + rule + '"] tr[data-key]');
		return first("orders-per-user")?.dataset.key === "alice" && first("pay-per-ip")?.dataset.key === "10.0.0.66";
	})()`, 10*time.Second))

	// The load opens the breaker once a burst of failures meets calls the
	// per-IP window admits (after ~12 s of the engine's clock, ~2.5 s of
	// real time): wait for it, however fast the page got here.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b := eng.Snapshot().Breakers; len(b) == 1 && b[0].Transitions[flow.BreakerOpen] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the breaker never opened within 30s of load: %+v", eng.Snapshot().Breakers)
		}
	}

	// Numbers: with the load stopped, the page must come to show exactly
	// the engine's totals.
	stopLoad()
	snap := eng.Snapshot()
	var checks []string
	for _, rs := range snap.Resources {
		var blocked uint64
		for _, n := range rs.Blocked {
			blocked += n
		}
		for field, want := range map[string]uint64{"passed": rs.Passed, "blocked": blocked,
			"blocked-user": rs.Blocked[flow.LevelUser], "blocked-ip": rs.Blocked[flow.LevelIP], "blocked-global": rs.Blocked[flow.LevelGlobal]} {
			checks = append(checks, fmt.Sprintf(`num(%q, %q) === %d`, rs.Resource, field, want))
		}
	}
	if len(checks) != 10 || snap.Resources[0].Passed == 0 || snap.Resources[0].Blocked[flow.LevelUser] == 0 {
		t.Fatalf("the load did not exercise both resources and levels: %+v", snap.Resources)
	}
	if len(snap.Breakers) != 1 || snap.Breakers[0].Transitions[flow.BreakerOpen] == 0 {
		t.Fatalf("the breaker never opened: %+v", snap.Breakers)
	}
	checks = append(checks, fmt.Sprintf(`document.querySelector('tr[data-breaker="pay-breaker"] [data-field="state"]')?.textContent === %q`, snap.Breakers[0].State.String()))
	// The rules table's breaker row shows its threshold and state, not a
	// limit of 0.
	checks = append(checks, fmt.Sprintf(`document.querySelector('tr[data-rule="pay-breaker"] [data-field="limit"]')?.textContent === "error_ratio threshold 0.50" &&
		document.querySelector('tr[data-rule="pay-breaker"] [data-field="effective"]')?.textContent.startsWith(%q)`, snap.Breakers[0].State.String()+", now "))
	numbers := `(() => {
		const num = (res, field) => Number(document.querySelector('[data-resource="' + res + '"] [data-field="' + field + '"]')?.textContent.replaceAll(",", ""));
		return ` + strings.Join(checks, " && ") + `;
	})()`
	if err := p.WaitFor(numbers, 10*time.Second); err != nil {
		var shown string
		_ = p.Eval(`document.getElementById("resources").innerText`, &shown)
		t.Fatalf("numbers never matched the snapshot %+v: %v\npage shows:\n%s", snap.Resources, err, shown)
	}

	// Reset alice through the form, as an operator would.
	if _, err := eng.Entry("GET /orders", flow.WithUser("alice")); err == nil {
		t.Fatal("alice passes before the reset: the test proves nothing")
	}
	must(t, p.Eval(`(() => {
		document.getElementById("token").value = "s3cret";
		document.getElementById("reset-rule").value = "orders-per-user";
		document.getElementById("reset-key").value = "alice";
		document.getElementById("reset-submit").click();
	})()`, nil))
	must(t, p.WaitFor(`document.getElementById("reset-result").textContent === "reset alice on orders-per-user"`, 10*time.Second))
	ks, err := eng.InspectKey("orders-per-user", "alice")
	if err != nil || ks.Tracked || ks.Refused != 0 {
		t.Fatalf("after the form's reset: %+v, %v; want alice untracked with no refusals", ks, err)
	}
	if p, err := eng.Entry("GET /orders", flow.WithUser("alice")); err != nil {
		t.Fatalf("alice refused after the reset: %v", err)
	} else {
		p.Exit()
	}

	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Fatalf("the page reported errors:\n%s", strings.Join(errs, "\n"))
	}
	t.Logf("page load %v (loadEventEnd %.0f ms), first data shown after %v; update interval %v (configured %v); checked: 2 charts with >= 5 points each, top keys, %d figures equal to the snapshot (breaker state included), reset via the form, no console errors",
		loaded.Round(time.Millisecond), navMs, firstData.Round(time.Millisecond), interval.Round(time.Millisecond), poll, len(checks))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
