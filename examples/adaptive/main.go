// Command adaptive shows the adaptive controls at work, on virtual time and
// the real engine. First the CPU controller: a real adaptive.Controller
// against a real flow.Engine, with the CPU signal coming from a simulated
// service (lag, dead time, noise), drawn as a text chart of CPU and the
// factor. Then an adaptive_concurrency rule with no human-set limit in
// front of a service of 50 concurrent calls (adaptive/simulate.Service)
// under 30% critical / 70% low traffic from 0.5x to 10x its capacity: the
// limit, in flight, latency and goodput per priority are written as an SVG
// chart (open it in a browser) and summarised per phase. It takes a few
// seconds and needs nothing but Go.
//
//	go run ./examples/adaptive [-seed 1] [-reject 0.03] [-svg adaptive.svg]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowgate/flowgate/adaptive"
	"github.com/flowgate/flowgate/adaptive/simulate"
	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// phase is one stretch of offered load.
type phase struct {
	from time.Duration
	load float64
}

var phases = []phase{{0, 1.5}, {30 * time.Second, 0.5}, {40 * time.Second, 3}, {70 * time.Second, 0.5}}

const total = 80 * time.Second

func main() {
	seed := flag.Uint64("seed", 1, "noise and dead-time seed")
	reject := flag.Float64("reject", 0.03, "CPU cost of a refused call relative to a served one")
	svg := flag.String("svg", filepath.Join(os.TempDir(), "flowgate-adaptive-concurrency.svg"), "where to write the adaptive_concurrency chart")
	flag.Parse()
	if err := run(*seed, *reject); err != nil {
		fmt.Fprintln(os.Stderr, "adaptive:", err)
		os.Exit(1)
	}
	if err := runConcurrency(*svg); err != nil {
		fmt.Fprintln(os.Stderr, "adaptive:", err)
		os.Exit(1)
	}
}

func run(seed uint64, reject float64) error {
	clk := clock.NewFake(simulate.Start())
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules([]flow.Rule{{ID: "api", Resource: "api", Algorithm: flow.AlgoTokenBucket, Limit: 1000, Adaptive: true}}); err != nil {
		return err
	}
	var reading float64
	c := adaptive.NewController(eng, adaptive.WithClock(clk),
		adaptive.WithSampler(adaptive.SamplerFunc(func() (float64, error) { return reading, nil })))
	defer c.Close()
	if err := c.Err(); err != nil {
		return err
	}
	// Each sample: the simulated service hands over its CPU reading, the
	// controller steps, and the factor it published (read back from the
	// engine) limits the next period's admissions.
	policy := func(cpu float64, now time.Time) float64 {
		clk.Set(now)
		reading = cpu
		if err := c.Step(); err != nil {
			fmt.Fprintln(os.Stderr, "step:", err)
		}
		return eng.AdaptiveFactor()
	}
	at := make([]time.Duration, len(phases))
	levels := make([]float64, len(phases))
	for i, p := range phases {
		at[i], levels[i] = p.from, p.load
	}
	m := simulate.Model{Seed: seed, RejectCost: reject}
	tr := m.Run(total, simulate.Steps(at, levels), policy)
	fmt.Print(chart(tr, c.Config()))
	fmt.Print(summary(tr))
	st := c.State()
	fmt.Printf("\nfinal: factor %.3f, smoothed cpu %.3f, %d samples, last decision %s (%s)\n",
		st.Published, st.CPU, st.Samples, st.Decision, st.Reason)
	return nil
}

// chart draws one column per second: 'c' the service's CPU, 'f' the factor,
// '#' both; '-' marks the target and '.' the band edges.
func chart(tr []simulate.Point, cfg adaptive.Config) string {
	const rows = 20
	cols := int(total / time.Second)
	cpu, f, load := make([]float64, cols), make([]float64, cols), make([]float64, cols)
	n := make([]int, cols)
	for _, p := range tr {
		i := min(int((p.T-1)/time.Second), cols-1)
		cpu[i] += p.CPU
		f[i] += p.Factor
		load[i] = p.Load
		n[i]++
	}
	row := func(v float64) int { return int(v*rows + 0.5) } // 0..rows
	var b strings.Builder
	fmt.Fprintf(&b, "CPU (c) and factor (f) over %v of virtual time; '-' target %.2f, '.' band [%.2f, %.2f]\n\n",
		total, cfg.CPUTarget, cfg.BandLow, cfg.BandHigh)
	for r := rows; r >= 0; r-- {
		fmt.Fprintf(&b, "%4.2f |", float64(r)/rows)
		for i := range cols {
			ch := byte(' ')
			switch r {
			case row(cfg.CPUTarget):
				ch = '-'
			case row(cfg.BandLow), row(cfg.BandHigh):
				ch = '.'
			}
			hc, hf := n[i] > 0 && row(cpu[i]/float64(n[i])) == r, n[i] > 0 && row(f[i]/float64(n[i])) == r
			switch {
			case hc && hf:
				ch = '#'
			case hc:
				ch = 'c'
			case hf:
				ch = 'f'
			}
			b.WriteByte(ch)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "     +%s\n      ", strings.Repeat("-", cols))
	for i := 0; i < cols; i += 10 {
		fmt.Fprintf(&b, "%-10s", fmt.Sprintf("%ds", i))
	}
	labels := []byte(strings.Repeat(" ", cols+8))
	for i := range cols {
		if i == 0 || load[i] != load[i-1] {
			copy(labels[i:], fmt.Sprintf("%.1fx", load[i]))
		}
	}
	fmt.Fprintf(&b, "\n load %s\n\n", strings.TrimRight(string(labels), " "))
	return b.String()
}

// summary prints, for each load phase after its first 10 s, the mean CPU and
// factor.
func summary(tr []simulate.Point) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %6s %9s %9s %9s\n", "phase", "load", "mean cpu", "max cpu", "mean f")
	for i, p := range phases {
		end := total
		if i+1 < len(phases) {
			end = phases[i+1].from
		}
		var sc, sf, mx float64
		k := 0
		for _, q := range tr {
			if q.T > p.from+5*time.Second && q.T <= end {
				sc += q.CPU
				sf += q.Factor
				mx = max(mx, q.CPU)
				k++
			}
		}
		if k == 0 {
			continue
		}
		fmt.Fprintf(&b, "%-12s %5.1fx %9.3f %9.3f %9.3f\n", fmt.Sprintf("%v-%v", p.from+5*time.Second, end), p.load, sc/float64(k), mx, sf/float64(k))
	}
	return b.String()
}
