package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/flow"
)

// scrape fetches the demo's own /metrics once, as Prometheus would.
func scrape(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// pickMetrics keeps a few telling flowgate_ lines of a scrape: the refusals
// by level, the queued orders, the reloaded limit, the breaker's state and
// transitions, reload status and alerts.
func pickMetrics(text string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "flowgate_") {
			continue
		}
		keep := false
		switch {
		case strings.HasPrefix(l, "flowgate_requests_total"):
			keep = (strings.Contains(l, `result="blocked"`) || strings.Contains(l, `result="waited"`)) &&
				!strings.HasSuffix(l, " 0") && !strings.Contains(l, `level="system"`)
		case strings.HasPrefix(l, "flowgate_rule_limit"):
			keep = strings.Contains(l, reloadRule)
		case strings.HasPrefix(l, "flowgate_breaker_transitions_total"):
			keep = !strings.HasSuffix(l, " 0")
		case strings.HasPrefix(l, "flowgate_rules_last_reload_successful"),
			strings.HasPrefix(l, "flowgate_alerts_firing"), strings.HasPrefix(l, "flowgate_breaker_state"):
			keep = true
		}
		if keep {
			out = append(out, l)
		}
	}
	return out
}

// printSummary ends the demo: totals, the ramp, the reload, the alerts, the
// metrics, and a line saying which of the things to show were shown.
func printSummary(w io.Writer, m *monitor, f frame, scraped string) {
	var sent, dropped uint64
	for _, a := range f.actors {
		sent += a.sent
		dropped += a.dropped
	}
	fmt.Fprintf(w, "== summary: %s of load, %d HTTP requests over loopback", time.Since(m.start).Round(100*time.Millisecond), sent)
	if dropped > 0 {
		fmt.Fprintf(w, " (%d not sent: every worker busy)", dropped)
	}
	fmt.Fprintln(w)
	byLevel, waited := summaryResources(w, f)
	summaryClients(w, f)
	ramped := summaryRamp(w, f)
	m.mu.Lock()
	alerts := append([]alerting.Alert(nil), m.alerts...)
	reloadOK := m.reloadOK
	events := append([]event(nil), m.events...)
	m.mu.Unlock()
	summaryReload(w, m, events)
	fired := summaryAlerts(w, m, alerts, f)
	fmt.Fprintf(w, "\n/metrics scraped once from %s; a few of its flowgate_ lines:\n", m.metricsURL)
	for _, l := range pickMetrics(scraped) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	mark := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "NO"
	}
	fmt.Fprintf(w, "\nshown: blocks at ip %s, user %s, global %s; queued waits %s; warm-up ramp %s; hot reload %s; alert fired %s\n",
		mark(byLevel[flow.LevelIP] > 0), mark(byLevel[flow.LevelUser] > 0), mark(byLevel[flow.LevelGlobal] > 0),
		mark(waited > 0), mark(ramped), mark(reloadOK), mark(fired > 0))
}

// summaryResources prints what each resource passed, made wait and
// blocked at each level, and returns the blocks by level and the waits
// over all of them.
func summaryResources(w io.Writer, f frame) (byLevel [flow.NumLevels]uint64, waited uint64) {
	fmt.Fprintf(w, "\n%-24s %7s %6s  %6s %6s %6s\n", "resource", "passed", "waited", "ip", "user", "global")
	var passed uint64
	for _, r := range f.resources {
		fmt.Fprintf(w, "%-24s %7d %6d  %6d %6d %6d\n", r.name, r.passed, r.waited,
			r.blocked[flow.LevelIP], r.blocked[flow.LevelUser], r.blocked[flow.LevelGlobal])
		for l, n := range r.blocked {
			byLevel[l] += n
		}
		passed += r.passed
		waited += r.waited
	}
	fmt.Fprintf(w, "%-24s %7d %6d  %6d %6d %6d   (blocked at ip, user, global)\n", "all", passed, waited,
		byLevel[flow.LevelIP], byLevel[flow.LevelUser], byLevel[flow.LevelGlobal])
	return byLevel, waited
}

// summaryClients prints what each simulated client sent and got back.
func summaryClients(w io.Writer, f frame) {
	fmt.Fprintf(w, "\n%-26s %6s %6s  %6s %6s %6s %7s %6s\n", "client", "sent", "ok", "ip", "user", "global", "breaker", "errors")
	for _, a := range f.actors {
		fmt.Fprintf(w, "%-26s %6d %6d  %6d %6d %6d %7d %6d\n", a.name, a.sent, a.ok,
			a.blocked[flow.LevelIP], a.blocked[flow.LevelUser], a.blocked[flow.LevelGlobal], a.broken, a.failed)
	}
}

// summaryRamp draws the warm-up resource's admissions per second and says
// whether they rose well above the cold rate.
func summaryRamp(w io.Writer, f frame) (ramped bool) {
	fmt.Fprintf(w, "\nwarm-up ramp on %s (admitted per second; cold %.0f/s, stable %.0f/s, warm-up %s):\n",
		resRecs, f.cold, f.stable, f.warmup)
	for _, p := range f.ramp {
		fmt.Fprintf(w, "  %5.1fs %4.0f/s %s\n", p.at.Seconds(), p.rate, strings.Repeat("#", int(p.rate/f.stable*40+0.5)))
		ramped = ramped || p.rate > 1.5*f.cold
	}
	return ramped
}

// summaryReload prints the reload events and the watcher's counts.
func summaryReload(w io.Writer, m *monitor, events []event) {
	fmt.Fprintln(w, "\nhot reload:")
	for _, e := range events {
		if strings.Contains(e.text, "reload") || strings.Contains(e.text, "rules file") {
			fmt.Fprintf(w, "  [%5.1fs] %s\n", e.at.Seconds(), e.text)
		}
	}
	st := m.watcher.Status()
	fmt.Fprintf(w, "  watcher: %d loads, %d refused, version in force %s\n", st.Reloads, st.Failures, short(st.Version))
}

// summaryAlerts prints the alert history the sink saw and the alerts
// still firing, and returns how many fired.
func summaryAlerts(w io.Writer, m *monitor, alerts []alerting.Alert, f frame) (fired int) {
	fmt.Fprintln(w, "\nalert history (from the alerting sink):")
	for _, a := range alerts {
		at := m.since(a.UpdatedAt).Seconds()
		if a.Status == alerting.StatusFiring {
			fired++
			fmt.Fprintf(w, "  [%5.1fs] FIRING   %-24s ratio %3.0f%% (%d of %d refused)\n", at, a.Resource, 100*a.Ratio, a.Blocked, a.Requests)
		} else {
			fmt.Fprintf(w, "  [%5.1fs] resolved %-24s ratio %3.0f%% (high since %.1fs)\n", at, a.Resource, 100*a.Ratio,
				m.since(a.StartsAt).Seconds())
		}
	}
	if len(alerts) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, s := range f.states {
		if s.State == alerting.Firing {
			fmt.Fprintf(w, "  still firing at the end: %s\n", s.Resource)
		}
	}
	return fired
}

// printIntro says what is about to happen: the rules in force, read back
// from the engine, and the scenario's timeline for this run's duration.
func printIntro(w io.Writer, rs []flow.Rule, d time.Duration) {
	fmt.Fprintln(w, "rules in force:")
	for _, r := range rs {
		per := "/s"
		if r.Window != time.Second {
			per = " per " + r.Window.String()
		}
		what := fmt.Sprintf("%g%s", r.Limit, per)
		switch r.Algorithm {
		case flow.AlgoTokenBucket:
			what += fmt.Sprintf(", burst %g", r.Burst)
		case flow.AlgoWarmUp:
			what += fmt.Sprintf(", cold %.0f/s, warm-up %s", r.Limit/r.ColdFactor/r.Window.Seconds(), r.Warmup)
		case flow.AlgoCircuitBreaker:
			what = fmt.Sprintf("%v > %g over %s (min %d), open %s, %d probes",
				r.Strategy, r.Threshold, r.Window, r.MinRequests, r.OpenFor, r.Probes)
		}
		if r.MaxWait > 0 {
			what += fmt.Sprintf(", queue %s", r.MaxWait)
		}
		fmt.Fprintf(w, "  %-24s %-26s %-6s %-14s %s\n", r.ID, r.Resource, r.Level, r.Algorithm, what)
	}
	at := func(f float64) string { return (time.Duration(f * float64(d))).Round(100 * time.Millisecond).String() }
	fmt.Fprintf(w, "timeline: 0s crowd of %d users + power user u-4711 | %s abuser | %s cold start on recommendations\n",
		crowdUsers, at(abuseFrom), at(coldFrom))
	fmt.Fprintf(w, "          %s-%s shipping carrier down | %s rules file edited | %s-%s flash sale (%d more users) | %s end\n\n",
		at(outageFrom), at(outageUntil), at(reloadAt), at(spikeFrom), at(spikeUntil), spikeUsers, d)
}
