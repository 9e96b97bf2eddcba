package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// accSummary folds the cells of one algorithm, setting and N (in-process)
// into the README's row: the worst and best window over the cells at or
// above the limit, the refusals under the limit in the cells below 0.9x,
// round trips per 1 000 decisions at 2x even, decisions/s at 10x skewed.
type accSummary struct {
	algo, setting          string
	n                      int
	worst, best            float64 // the algorithm's own windows
	sWorst, sBest          float64 // 1 s windows in 10 ms steps
	refusedLow, refusedAll int
	trips, dps             float64
	skipped, windows       int
	measured               int // cells at >= 1x with windows left to measure
}

func accSummarize(rows []accRow) []accSummary {
	var out []accSummary
	find := func(s accSummary) int {
		for i, o := range out {
			if o.algo == s.algo && o.setting == s.setting && o.n == s.n {
				return i
			}
		}
		out = append(out, s)
		return len(out) - 1
	}
	for _, r := range rows {
		if r.Procs {
			continue
		}
		i := find(accSummary{algo: r.Algo, setting: r.Setting, n: r.N, worst: math.Inf(1), sWorst: math.Inf(1), trips: -1, dps: -1})
		s := &out[i]
		s.skipped += r.Skipped
		s.windows += r.Windows
		s.refusedAll += r.RefusedUnder
		if r.Load < 0.9 {
			s.refusedLow += r.RefusedUnder
		}
		if r.Load >= 1 && r.Windows > 0 {
			s.measured++
			s.worst = min(s.worst, r.WorstPct)
			s.best = max(s.best, r.BestPct)
			if r.SlidingBestPct > 0 { // 0: every sliding window left out
				s.sWorst = min(s.sWorst, r.SlidingWorstPct)
				s.sBest = max(s.sBest, r.SlidingBestPct)
			}
		}
		if hot := r.Shape == "skewed" || r.N == 1; hot && r.Load == 1 {
			s.trips = r.TripsPer1000
		} else if hot && r.Load == 10 {
			s.dps = r.DecisionsPerS
		}
	}
	return out
}

// accBand is the band for a window at or above the limit:
// 98–102% of the limit, plus the burst for a token bucket.
func accBand(algo string) (lo, hi float64) {
	if algo == "token_bucket" {
		return 98, 102 + 100.0*accBurst/accLimit
	}
	return 98, 102
}

// accMark formats a percentage and marks it ✗ when it leaves the band.
func accMark(algo string, v float64) string {
	if math.IsInf(v, 0) {
		return "–"
	}
	if lo, hi := accBand(algo); v < lo || v > hi {
		return fmt.Sprintf("%.1f ✗", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func accFmt(v float64, f string) string {
	if v < 0 || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf(f, v)
}

// accRun describes a run; it is the first line of accuracy.txt, so the
// table can be drawn again from the file (TestAccuracyRender).
type accRun struct {
	Time                  string
	Cores                 int
	Platform              string
	LoadBefore, LoadAfter string
	Grid, Cell            string
}

func newAccRun(loadBefore string, cells int) accRun {
	grid := fmt.Sprintf("the full grid (%d cells)", cells)
	var subset []string
	for _, v := range []string{"ACC_ALGOS", "ACC_SETTINGS", "ACC_NS", "ACC_SHAPES", "ACC_LOADS"} {
		if os.Getenv(v) != "" {
			subset = append(subset, v+"="+os.Getenv(v))
		}
	}
	if len(subset) > 0 {
		grid = fmt.Sprintf("a subset of the grid (%s: %d cells)", strings.Join(subset, " "), cells)
	}
	return accRun{Time: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Cores: runtime.NumCPU(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH + ", " + runtime.Version(), LoadBefore: loadBefore, LoadAfter: accLoadAvg(),
		Grid: grid, Cell: accEnv("ACC_CELL", "3s")}
}

// accWrite saves the run and every cell (accuracy.txt) and renders them.
func accWrite(run accRun, rows []accRow) error {
	var all bytes.Buffer
	b, _ := json.Marshal(run)
	all.Write(b)
	all.WriteByte('\n')
	for _, r := range rows {
		b, _ := json.Marshal(r)
		all.Write(b)
		all.WriteByte('\n')
	}
	if err := os.WriteFile("accuracy.txt", all.Bytes(), 0o644); err != nil {
		return err
	}
	return accRender(run, rows)
}

// TestAccuracyRender draws the table and pictures again from accuracy.txt
// (FLOWGATE_ACCURACY_RENDER=1), as after a change to how they are drawn.
func TestAccuracyRender(t *testing.T) {
	if os.Getenv("FLOWGATE_ACCURACY_RENDER") == "" {
		t.Skip("redraws bench/README.md's accuracy table from accuracy.txt (FLOWGATE_ACCURACY_RENDER=1)")
	}
	b, err := os.ReadFile("accuracy.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var run accRun
	if err := json.Unmarshal([]byte(lines[0]), &run); err != nil || run.Time == "" {
		t.Fatalf("accuracy.txt line 1: not a run header (%v)", err)
	}
	var rows []accRow
	for i, l := range lines[1:] {
		var r accRow
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("accuracy.txt line %d: %v", i+2, err)
		}
		rows = append(rows, r)
	}
	if err := accRender(run, rows); err != nil {
		t.Fatal(err)
	}
}

// accRender draws one picture per algorithm (accuracy-<algo>.svg) and
// puts the summary table between the accuracy markers of README.md.
func accRender(run accRun, rows []accRow) error {
	sum := accSummarize(rows)
	var md strings.Builder
	fmt.Fprintf(&md, "Run %s on %d cores (%s), load average %s at the start and %s at the end; limit %d/s, window 1 s, %s of %s. ",
		run.Time, run.Cores, run.Platform, run.LoadBefore, run.LoadAfter, accLimit, run.Grid, run.Cell)
	md.WriteString("Worst/best: fewest and most admitted in one of the algorithm's own 1 s windows (epoch-aligned as the algorithm's: fixed_window's seconds, sliding_window's 100 ms sub-window grid; token_bucket and the split in 10 ms steps; after the first second but fixed_window), over the cells at ≥ 1× the limit, as % of the limit; " +
		"✗ marks a figure outside 98–102% (token_bucket and redis_rate, burst 20: 98–104%). Sliding: the same in every 1 s window in 10 ms steps, what a downstream service sees. " +
		"Refused < 0.9×: refusals while the trailing second admitted under 98% of the limit, in the cells at 0.5× and 0.8×. Trips: Redis scripts per 1 000 decisions at 1×, decisions/s at 10× (paced: the offered load that got decided), both skewed (N = 1: even). " +
		"Windows left out: they overlap a stall (> 20 ms) of the load generator.\n\n")
	md.WriteString("| algorithm | setting | N | worst % | best % | sliding worst–best % | refused < 0.9× | trips/1000 | decisions/s | windows left out |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range sum {
		worst, best, sliding := "–", "–", "–"
		if s.measured > 0 {
			worst, best = accMark(s.algo, s.worst), accMark(s.algo, s.best)
			if s.sBest > 0 {
				sliding = fmt.Sprintf("%.1f–%.1f", s.sWorst, s.sBest)
			}
		}
		fmt.Fprintf(&md, "| %s | %s | %d | %s | %s | %s | %d | %s | %s | %d of %d |\n", s.algo, s.setting, s.n,
			worst, best, sliding, s.refusedLow, accFmt(s.trips, "%.0f"), accFmt(s.dps, "%.0f"), s.skipped, s.skipped+s.windows)
	}
	for _, r := range rows {
		if r.Procs && r.Windows == 0 {
			fmt.Fprintf(&md, "\nSeparate OS processes (%s, %s, N = %d, %s, %.0f×): every window left out (stalls), %d refused under the limit, %.0f trips per 1 000 decisions.\n",
				r.Algo, r.Setting, r.N, r.Shape, r.Load, r.RefusedUnder, r.TripsPer1000)
		} else if r.Procs {
			fmt.Fprintf(&md, "\nSeparate OS processes (%s, %s, N = %d, %s, %.0f×): worst %.1f%%, best %.1f%% (sliding %.1f–%.1f%%), %d refused under the limit, %.0f trips per 1 000 decisions.\n",
				r.Algo, r.Setting, r.N, r.Shape, r.Load, r.WorstPct, r.BestPct, r.SlidingWorstPct, r.SlidingBestPct, r.RefusedUnder, r.TripsPer1000)
		}
	}
	var algos []string
	for _, s := range sum {
		if !slices.Contains(algos, s.algo) {
			algos = append(algos, s.algo)
		}
	}
	md.WriteString("\n")
	for _, a := range algos {
		name := "accuracy-" + a + ".svg"
		if err := os.WriteFile(name, accSVG(a, sum), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&md, "![%s: largest error against N](%s)\n", a, name)
	}
	return accSplice("README.md", md.String())
}

// accSVG draws the largest error (max of 100-worst, best-100, in % of the
// limit) against N, one line per setting.
func accSVG(algo string, sum []accSummary) []byte {
	const w, h, left, top, bottom = 560, 300, 50, 30, 40
	var settings []string
	var ns []int
	for _, s := range sum {
		if s.algo != algo {
			continue
		}
		if !slices.Contains(settings, s.setting) {
			settings = append(settings, s.setting)
		}
		if !slices.Contains(ns, s.n) {
			ns = append(ns, s.n)
		}
	}
	slices.Sort(ns)
	errOf := func(s accSummary) float64 {
		if s.measured == 0 {
			return -1
		}
		_, hi := accBand(s.algo) // a token bucket's burst is not an error
		return max(100-s.worst, s.best-(hi-2), 0)
	}
	// The scale stops at 10%: the split's misses (tens of percent) would
	// flatten every other line into the band; a point above is drawn at
	// the top with its figure beside it.
	top1 := 5.0
	for _, s := range sum {
		if s.algo == algo {
			top1 = min(10, max(top1, math.Ceil(errOf(s))))
		}
	}
	x := func(i int) float64 { return left + float64(i)*float64(w-left-20)/float64(max(1, len(ns)-1)) }
	y := func(e float64) float64 { return top + (1-e/top1)*float64(h-top-bottom) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="13">%s: largest error in its own 1 s windows, loads ≥ 1×</text>`+"\n", left, algo)
	// The band: within 2% of the limit (above it, beyond a token
	// bucket's burst).
	fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="#e6f4e6"/><text x="%d" y="%.1f" fill="#4a4">2%% band</text>`+"\n",
		left, y(2), w-20-left, y(0)-y(2), w-80, y(2)+12)
	for _, g := range []float64{0, 2, top1} {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ccc"/><text x="8" y="%.1f">%.0f%%</text>`+"\n", left, w-20, y(g), y(g), y(g)+4, g)
	}
	for i, n := range ns {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">N=%d</text>`+"\n", x(i), h-bottom+16, n)
	}
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}
	for k, st := range settings {
		var pts []string
		c := colors[k%len(colors)]
		for i, n := range ns {
			for _, s := range sum {
				if s.algo == algo && s.setting == st && s.n == n && errOf(s) >= 0 {
					e := errOf(s)
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(min(e, top1))))
					if e > top1 {
						fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%.0f%%</text>`+"\n", x(i)+3, y(top1)+12+float64(k)*11, c, e)
					}
				}
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", left+k*85, h-8, c, st)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// accLoadAvg is the 1, 5 and 15 minute load averages ("?" off Linux).
func accLoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

func accSplice(path, section string) error {
	const start, end = "<!-- accuracy:start -->", "<!-- accuracy:end -->"
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, start), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %s ... %s markers", path, start, end)
	}
	return os.WriteFile(path, []byte(s[:i+len(start)]+"\n"+section+s[j:]), 0o644)
}
