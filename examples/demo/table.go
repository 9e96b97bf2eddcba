package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/flowgate/flowgate/alerting"
	"github.com/flowgate/flowgate/flow"
)

// screen draws frames. On a terminal it redraws the table in place with ANSI
// cursor movement; otherwise (-plain, CI logs) it writes no escape codes:
// events as lines when they happen and the table every other second.
type screen struct {
	out    io.Writer
	plain  bool
	lines  int // lines of the table last drawn (ANSI mode)
	events int // events already printed (plain mode)
	// size returns the terminal's columns and rows (0 when unknown); asked
	// every frame, as the terminal may be resized while the demo runs.
	size func() (width, height int)
}

func newScreen(out io.Writer, plain bool) *screen {
	s := &screen{out: out, plain: plain, size: func() (int, int) { return termSize(out) }}
	if !plain {
		fmt.Fprint(out, "\x1b[?25l") // hide the cursor while redrawing
	}
	return s
}

// frame draws f; full asks plain mode for the whole table, not only events.
func (s *screen) frame(f frame, full bool) {
	var b strings.Builder
	if s.plain {
		for _, e := range f.events[s.events:] {
			fmt.Fprintf(&b, "[%5.1fs] %s\n", e.at.Seconds(), e.text)
		}
		s.events = len(f.events)
		if full {
			for _, l := range table(f, true, 0, 0) {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
		io.WriteString(s.out, b.String())
		return
	}
	width, height := s.size()
	lines := table(f, false, height-1, width)
	if s.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dF\x1b[J", s.lines) // back to the table's first line, clear below
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\x1b[K\n")
	}
	s.lines = len(lines)
	io.WriteString(s.out, b.String())
}

// end leaves the last table on screen and gives the cursor back.
func (s *screen) end() {
	if !s.plain {
		fmt.Fprint(s.out, "\x1b[?25h")
	}
	fmt.Fprintln(s.out)
}

// table renders one frame as lines; its fixed rows are at most 80 columns.
// maxLines > 0 bounds the count and width > 0 the columns, for a terminal
// the table must fit in to be redrawn in place: the clients and the oldest
// events are left out first, events wrap, other lines are clipped.
func table(f frame, ascii bool, maxLines, width int) []string {
	sect := func(lines ...string) []string { return lines }
	var head []string
	if ascii {
		head = append(head, fmt.Sprintf("---- %4.1fs / %s ----------------------------------------------------------", f.elapsed.Seconds(), f.total))
	}
	head = append(head,
		fmt.Sprintf("%s %4.1fs / %s", bar(f.elapsed.Seconds()/f.total.Seconds(), 40, ascii), f.elapsed.Seconds(), f.total),
		"now: "+f.phase)

	res := sect("",
		fmt.Sprintf("%41s%20s   %13s", "", "---- blocked at ----", "- last sec. -"),
		fmt.Sprintf("%-24s %7s %6s  %6s %6s %6s   %6s %6s", "resource", "passed", "waited", "ip", "user", "global", "adm/s", "blk/s"))
	for _, r := range f.resources {
		res = append(res, fmt.Sprintf("%-24s %7d %6d  %6d %6d %6d   %6.0f %6.0f", r.name, r.passed, r.waited,
			r.blocked[flow.LevelIP], r.blocked[flow.LevelUser], r.blocked[flow.LevelGlobal], r.admitRate, r.blockRate))
	}

	clients := sect("",
		fmt.Sprintf("%42s%20s %7s", "", "- 429s, by level -", "503s"),
		fmt.Sprintf("%-26s %6s %6s  %6s %6s %6s %7s", "client", "sent", "ok", "ip", "user", "global", "breaker"))
	for _, a := range f.actors {
		clients = append(clients, fmt.Sprintf("%-26s %6d %6d  %6d %6d %6d %7d", a.name, a.sent, a.ok,
			a.blocked[flow.LevelIP], a.blocked[flow.LevelUser], a.blocked[flow.LevelGlobal], a.broken))
	}

	warm := append(sect(""), warmupLines(f, ascii)...)

	ratio := ratioLines(f, ascii)
	var events []string
	if !ascii { // plain mode prints events as lines when they happen
		events = eventLines(f, width)
	}

	n := len(head) + len(res) + len(warm) + len(ratio)
	if maxLines > 0 && n+len(clients) > maxLines {
		clients = nil
	}
	n += len(clients)
	if maxLines > 0 && n+len(events) > maxLines {
		events = events[min(len(events), n+len(events)-maxLines):]
	}
	var out []string
	for _, s := range [][]string{head, res, clients, warm, ratio} {
		for _, l := range s {
			out = append(out, clipWidth(l, width))
		}
	}
	return append(out, events...)
}

// ratioLines shows each resource's rejection ratio against the alert's
// threshold, and the rules version in force.
func ratioLines(f frame, ascii bool) []string {
	ratio := []string{"", fmt.Sprintf("rejection ratio over the last %s (alert when above %.0f%% for %s):", f.window, 100*f.threshold, f.forDur)}
	for _, st := range f.states {
		state := st.State.String()
		if st.State == alerting.Firing {
			state = paint(strings.ToUpper(state), red, ascii)
		}
		ratio = append(ratio, fmt.Sprintf("  %-24s %4.0f%% %s %s", st.Resource, 100*st.Ratio, ratioBar(st.Ratio, f.threshold, ascii), state))
	}
	return append(ratio, "", fmt.Sprintf("rules version %s; per-user limit on products now %.0f/s", short(f.version), f.userLimit))
}

// eventLines shows the last six events, wrapped to width, a firing alert
// in red.
func eventLines(f frame, width int) []string {
	ev := f.events
	if len(ev) > 6 {
		ev = ev[len(ev)-6:]
	}
	var events []string
	for _, e := range ev {
		for _, l := range wrap(fmt.Sprintf("[%5.1fs] %s", e.at.Seconds(), e.text), width, 9) {
			if strings.HasPrefix(e.text, "ALERT FIRING") {
				l = paint(l, red, false)
			}
			events = append(events, l)
		}
	}
	return events
}

// warmupLines shows the admitted rate of the warm-up resource, second by
// second, against its cold and stable rates.
func warmupLines(f frame, ascii bool) []string {
	head := fmt.Sprintf("warm-up  %s: cold %.0f/s -> stable %.0f/s over %s", resRecs, f.cold, f.stable, f.warmup)
	if len(f.ramp) == 0 {
		return []string{head, fmt.Sprintf("  cold start at %.0fs: no traffic yet, the limiter sits cold", coldFrom*f.total.Seconds())}
	}
	pts := f.ramp
	if len(pts) > 14 {
		pts = pts[len(pts)-14:]
	}
	var nums strings.Builder
	for _, p := range pts {
		fmt.Fprintf(&nums, "%4.0f", p.rate)
	}
	now := pts[len(pts)-1].rate
	return []string{
		head,
		"  admitted/s" + nums.String(),
		fmt.Sprintf("  now %4.0f/s %s %3.0f%% of stable", now, bar(now/f.stable, 30, ascii), 100*now/f.stable),
	}
}

// bar draws a fraction (clamped to [0, 1]) as a bar of width cells.
func bar(frac float64, width int, ascii bool) string {
	full, empty := "█", "░"
	if ascii {
		full, empty = "#", "."
	}
	n := int(frac*float64(width) + 0.5)
	n = max(0, min(width, n))
	return "[" + strings.Repeat(full, n) + strings.Repeat(empty, width-n) + "]"
}

// ratioBar draws a ratio on 20 cells with the threshold marked by '|'.
func ratioBar(ratio, threshold float64, ascii bool) string {
	const width = 20
	full, empty := "█", "░"
	if ascii {
		full, empty = "#", "."
	}
	n := max(0, min(width, int(ratio*width+0.5)))
	t := max(0, min(width-1, int(threshold*width+0.5)))
	var b strings.Builder
	b.WriteByte('[')
	for i := range width {
		switch {
		case i == t:
			b.WriteByte('|')
		case i < n:
			b.WriteString(full)
		default:
			b.WriteString(empty)
		}
	}
	b.WriteByte(']')
	return b.String()
}

const red = "\x1b[1;31m"

// paint colours s on a terminal; plain mode gets s as it is.
func paint(s, color string, plain bool) string {
	if plain {
		return s
	}
	return color + s + "\x1b[0m"
}
