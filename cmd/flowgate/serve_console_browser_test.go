package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/cluster/remote"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/browsertest"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// TestServeConsoleInlineRules opens the console of `flowgate serve` in a
// real headless chromium after 60 cluster decisions on rules the client
// sent inline (serve's default: no rules document). The server's engine
// holds no rule, so the page must show the service's own decisions: one
// card per resource, with what it granted and refused at each level.
func TestServeConsoleInlineRules(t *testing.T) {
	b := browsertest.Start(t)
	rs := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sv := startServe(t, ctx, "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0", "-redis", rs.Addr, "-timeout", "1s")

	want := decideSixty(t, sv.addr)
	// The API first, so that a wrong count is told apart from a page that
	// does not render it.
	checkServeSnapshot(t, "http://"+sv.metricsAddr+"/flowgate/api/snapshot", want)

	p, err := b.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate("http://" + sv.metricsAddr + "/flowgate/"); err != nil {
		t.Fatal(err)
	}
	var checks []string
	for res, fields := range want {
		for field, n := range fields {
			checks = append(checks, fmt.Sprintf(`num(%q, %q) === %d`, res, field, n))
		}
	}
	numbers := `(() => {
		const num = (res, field) => Number(document.querySelector('[data-resource="' + res + '"] [data-field="' + field + '"]')?.textContent.replaceAll(",", ""));
		return document.querySelectorAll("#resources .card").length === 2 && ` + strings.Join(checks, " && ") + `;
	})()`
	if err := p.WaitFor(numbers, 15*time.Second); err != nil {
		var shown string
		_ = p.Eval(`document.getElementById("resources").innerText`, &shown)
		t.Fatalf("the console never showed the service's decisions %v: %v\npage shows:\n%s", want, err, shown)
	}
	// Whose decisions they are, and charts with their axes; with no rate
	// yet (nothing decided since the page opened) each chart says so.
	var page struct {
		Decider string
		Axes    int
		Empty   int
	}
	must(t, p.WaitFor(`window.fg.updates >= 1`, 10*time.Second))
	must(t, p.Eval(`({
		Decider: document.getElementById("decider").textContent,
		Axes: document.querySelectorAll('#resources svg.chart text[data-axis="peak"]').length,
		Empty: [...document.querySelectorAll("#resources svg.chart")].filter(s => s.querySelector("text.empty") || Number(s.dataset.points) >= 2).length,
	})`, &page))
	if page.Decider != "the token service" || page.Axes != 2 || page.Empty != 2 {
		t.Errorf("page: decided by %q, %d charts with a rate axis, %d with a line or an empty-state note; want the token service, 2, 2", page.Decider, page.Axes, page.Empty)
	}
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Fatalf("the page reported errors:\n%s", strings.Join(errs, "\n"))
	}
	cancel()
	if got := <-sv.code; got != exitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", got, sv.stderr.String())
	}
}

// decideSixty has an engine whose rules go inline to the service at addr
// make 60 calls, and returns what the service must have decided per
// resource: its granted ("passed") and refused ("blocked") counts.
func decideSixty(t *testing.T, addr string) map[string]map[string]uint64 {
	t.Helper()
	c, err := remote.New([]string{addr}, remote.WithTimeout(time.Second)) // rules go inline
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := &flow.ClusterSpec{Fallback: "deny"}
	e := flow.NewEngine(flow.WithTokenServer(c))
	if err := e.LoadRules([]flow.Rule{
		{ID: "orders", Resource: "GET /orders", Algorithm: flow.AlgoFixedWindow, Limit: 25, Window: time.Hour, Cluster: cl},
		{ID: "pay-per-user", Resource: "POST /pay", Level: flow.LevelUser, Algorithm: flow.AlgoFixedWindow, Limit: 5, Window: time.Hour, Cluster: cl},
	}); err != nil {
		t.Fatal(err)
	}
	call := func(resource string, opts ...flow.EntryOption) {
		if p, err := e.Entry(resource, opts...); err == nil {
			p.Exit()
		}
	}
	for range 40 { // 25 granted, 15 refused at the global level
		call("GET /orders")
	}
	for i := range 20 { // 5 granted to each of two users, 10 refused at the user level
		call("POST /pay", flow.WithUser(fmt.Sprintf("u%d", i%2)))
	}
	return map[string]map[string]uint64{
		"GET /orders": {"passed": 25, "blocked": 15, "blocked-global": 15, "blocked-user": 0},
		"POST /pay":   {"passed": 10, "blocked": 10, "blocked-global": 0, "blocked-user": 10},
	}
}

// checkServeSnapshot reads the admin API's snapshot and compares each
// resource's granted and refused counts with want.
func checkServeSnapshot(t *testing.T, url string, want map[string]map[string]uint64) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var snap admin.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		t.Fatal(err)
	}
	if snap.Decider != "service" || len(snap.Resources) != len(want) {
		t.Fatalf("snapshot: decider %q, resources %+v; want the service's, %d", snap.Decider, snap.Resources, len(want))
	}
	for _, r := range snap.Resources {
		w := want[r.Resource]
		got := map[string]uint64{"passed": r.Passed, "blocked": r.Blocked["global"] + r.Blocked["user"],
			"blocked-global": r.Blocked["global"], "blocked-user": r.Blocked["user"]}
		for k, n := range w {
			if got[k] != n {
				t.Errorf("snapshot %s: %s = %d, want %d", r.Resource, k, got[k], n)
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
