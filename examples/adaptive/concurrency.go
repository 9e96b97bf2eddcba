package main

import (
	"fmt"
	"math"
	"os"
	"time"

	"github.com/flowgate/flowgate/adaptive/simulate"
	"github.com/flowgate/flowgate/flow"
)

// The second part: an adaptive_concurrency rule with no human-set limit in
// front of a service of capacity 50 concurrent calls and 10ms latency
// (adaptive/simulate.Service), offered 30% critical and 70% low traffic at
// 0.5x, 2x, 5x, 10x and back to 0.5x its capacity, on the real engine.

var concPhases = []phase{{0, 0.5}, {5 * time.Second, 2}, {15 * time.Second, 5}, {25 * time.Second, 10}, {35 * time.Second, 0.5}}

const concTotal = 40 * time.Second

func runConcurrency(svgPath string) error {
	svc := simulate.Service{Capacity: 50, Latency: 10 * time.Millisecond}
	load := func(t time.Duration) float64 {
		l := 0.0
		for _, p := range concPhases {
			if t >= p.from {
				l = p.load
			}
		}
		return l
	}
	res, err := svc.Simulate(simulate.Setup{
		Rules: []flow.Rule{simulate.AdaptiveRule()},
		Mix:   simulate.Mix{0.7, 0, 0, 0.3}, // low, normal, high, critical
		Load:  load, Seed: 1,
	}, concTotal, 0)
	if err != nil {
		return err
	}
	if err := concurrencyChart(svgPath, res.Samples); err != nil {
		return err
	}
	concurrencyTable(res.Samples)
	fmt.Printf("chart: %s\n", svgPath)
	return nil
}

// concurrencyChart draws the limit and calls in flight, the latency and
// the goodput by priority over the run, into an SVG file at path.
func concurrencyChart(path string, samples []simulate.Sample) error {
	n := len(samples)
	xs := make([]float64, n)
	limit, inFlight := make([]float64, n), make([]float64, n)
	p50, p99 := make([]float64, n), make([]float64, n)
	crit, low := make([]float64, n), make([]float64, n)
	for i, s := range samples {
		xs[i] = s.T.Seconds()
		limit[i], inFlight[i] = s.Limit, s.InFlight
		p50[i], p99[i] = ms(s.P50), ms(s.P99)
		crit[i], low[i] = 100*s.Goodput[3], 100*s.Goodput[0]
	}
	marks := map[float64]string{}
	for _, p := range concPhases {
		marks[p.from.Seconds()] = fmt.Sprintf("%gx", p.load)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = writeSVG(f, "adaptive_concurrency: capacity 50 in flight, 10ms; 30% critical / 70% low", xs, []panel{
		{title: "Concurrency limit and calls in flight (capacity: 50)", lines: []series{
			{"limit", "#d62728", limit}, {"in flight", "#1f77b4", inFlight}}},
		{title: "Latency of completed calls (no-load p99 is 15ms)", unit: "ms", lines: []series{
			{"p50", "#2ca02c", p50}, {"p99", "#ff7f0e", p99}}},
		{title: "Goodput by priority, % of capacity", unit: "%", lines: []series{
			{"critical", "#9467bd", crit}, {"low", "#8c564b", low}}},
	}, marks)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// concurrencyTable prints, for each load phase past its first 2 s, the
// mean limit, the worst p99 and the mean goodput, in all and by priority.
func concurrencyTable(samples []simulate.Sample) {
	fmt.Printf("\nadaptive_concurrency, capacity 50 x 10ms, 30%% critical / 70%% low:\n")
	fmt.Printf("%-12s %6s %8s %8s %8s %10s %10s\n", "phase", "load", "limit", "p99", "goodput", "critical", "low")
	for i, p := range concPhases {
		end := concTotal
		if i+1 < len(concPhases) {
			end = concPhases[i+1].from
		}
		var lim, p99max, good, cg, lg float64
		k := 0
		for _, s := range samples {
			if s.T > p.from+2*time.Second && s.T <= end {
				lim += s.Limit
				p99max = math.Max(p99max, ms(s.P99))
				good += s.Goodput[0] + s.Goodput[3]
				cg += s.Goodput[3]
				lg += s.Goodput[0]
				k++
			}
		}
		if k == 0 {
			continue
		}
		kf := float64(k)
		fmt.Printf("%-12s %5.1fx %8.1f %6.1fms %7.0f%% %9.0f%% %9.0f%%\n", fmt.Sprintf("%v-%v", p.from+2*time.Second, end), p.load,
			lim/kf, p99max, 100*good/kf, 100*cg/kf, 100*lg/kf)
	}
}

func ms(d time.Duration) float64 {
	if d == 0 {
		return math.NaN()
	}
	return float64(d) / float64(time.Millisecond)
}
