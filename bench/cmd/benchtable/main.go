// Command benchtable turns the output of one `go test -bench` run of the
// bench module into the results section of bench/README.md, so the figures
// there are the figures of that run and nothing else.
//
//	benchtable -in results.txt -readme README.md
//
// It reads the benchmark lines and the "# key: value" header lines
// scripts/bench-peers.sh writes before them (machine, versions, date),
// takes the median of each metric over the -count runs, and replaces what
// lies between the markers <!-- benchtable:start --> and
// <!-- benchtable:end --> in the README. Without -readme it prints the
// section.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ratioCol is a row's time per op over its flowgate row's.
const ratioCol = "÷ flowgate"

// groupOrder is the order of the README's tables: the in-process
// workloads from the simplest up, then Redis; groups not named here follow
// in run order.
var groupOrder = []string{"PeersPass", "PeersBlock", "PeersPassParallel", "PeersBlockParallel",
	"PeersKeys", "PeersKeysParallel", "PeersBreaker", "PeersRedis", "Cluster", "ClusterRatio"}

const (
	startMarker = "<!-- benchtable:start -->"
	endMarker   = "<!-- benchtable:end -->"
)

func main() {
	in := flag.String("in", "results.txt", "go test -bench output")
	readme := flag.String("readme", "", "README to update between the markers (default: print)")
	flag.Parse()
	if err := run(*in, *readme, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(in, readme string, out io.Writer) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	section := render(res)
	if readme == "" {
		_, err := io.WriteString(out, section)
		return err
	}
	doc, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	updated, err := splice(doc, section)
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	return os.WriteFile(readme, updated, 0o644)
}

// splice replaces the text between the markers with section.
func splice(doc []byte, section string) ([]byte, error) {
	i := bytes.Index(doc, []byte(startMarker))
	j := bytes.Index(doc, []byte(endMarker))
	if i < 0 || j < i {
		return nil, errors.New("no " + startMarker + " ... " + endMarker + " markers")
	}
	var b bytes.Buffer
	b.Write(doc[:i+len(startMarker)])
	b.WriteString("\n")
	b.WriteString(section)
	b.Write(doc[j:])
	return b.Bytes(), nil
}

// bench is one benchmark's samples: every value of every metric, one per run.
type bench struct {
	name    string // without "Benchmark" and the -GOMAXPROCS suffix
	metrics map[string][]float64
	units   []string // in order of first appearance
}

type results struct {
	header  [][2]string // "# key: value" lines, in order
	cpu     string      // from go test's "cpu:" line
	benches []*bench    // in order of first appearance
	failed  []string    // FAIL / --- FAIL lines
}

func parse(r io.Reader) (*results, error) {
	res := &results{}
	byName := map[string]*bench{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# "):
			if k, v, ok := strings.Cut(line[2:], ":"); ok {
				res.header = append(res.header, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
			}
		case strings.HasPrefix(line, "cpu: "):
			res.cpu = strings.TrimPrefix(line, "cpu: ")
		case strings.HasPrefix(line, "--- FAIL") || line == "FAIL" || strings.HasPrefix(line, "FAIL\t"):
			res.failed = append(res.failed, line)
		case strings.HasPrefix(line, "Benchmark"):
			fs := strings.Fields(line)
			if len(fs) < 4 || len(fs)%2 != 0 {
				continue // a benchmark's log line, or its name before a failure
			}
			if _, err := strconv.Atoi(fs[1]); err != nil {
				continue
			}
			name := trimProcs(strings.TrimPrefix(fs[0], "Benchmark"))
			b := byName[name]
			if b == nil {
				b = &bench{name: name, metrics: map[string][]float64{}}
				byName[name] = b
				res.benches = append(res.benches, b)
			}
			for i := 2; i+1 < len(fs); i += 2 {
				v, err := strconv.ParseFloat(fs[i], 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: %q: %w", n, fs[i], err)
				}
				unit := fs[i+1]
				if _, seen := b.metrics[unit]; !seen {
					b.units = append(b.units, unit)
				}
				b.metrics[unit] = append(b.metrics[unit], v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(res.benches) == 0 {
		return nil, errors.New("no benchmark lines")
	}
	return res, nil
}

// trimProcs drops the "-2" go test appends for GOMAXPROCS.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// sides are the name components that say which library a row measures.
var sides = []string{"flowgate", "flowgate-leased", "xrate", "xrate-mutexmap", "xrate-syncmap", "uber", "redis_rate"}

// baseline is the name of the flowgate row a row compares with, or "".
func baseline(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		if slices.Contains(sides, p) {
			parts[i] = "flowgate"
			return strings.Join(parts, "/")
		}
	}
	return ""
}

// columns orders a group's metrics: time first, then the ratio, the
// benchmark's own metrics, and memory last.
func columns(group []*bench) []string {
	var own []string
	for _, b := range group {
		for _, u := range b.units {
			if u != "ns/op" && u != "B/op" && u != "allocs/op" && !slices.Contains(own, u) {
				own = append(own, u)
			}
		}
	}
	cols := []string{"ns/op", ratioCol}
	cols = append(cols, own...)
	return append(cols, "B/op", "allocs/op")
}

func format(unit string, v float64) string {
	switch {
	case unit == "decisions/s" || unit == "B/op" || unit == "allocs/op":
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v == 0:
		return "0"
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 0.1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

func render(res *results) string {
	var b strings.Builder
	if len(res.header) > 0 || res.cpu != "" {
		b.WriteString("**Machine and run** (written by scripts/bench-peers.sh with the results):\n\n")
		for _, kv := range res.header {
			fmt.Fprintf(&b, "- %s: %s\n", kv[0], kv[1])
		}
		if res.cpu != "" {
			fmt.Fprintf(&b, "- go test cpu: %s\n", res.cpu)
		}
		b.WriteString("\n")
	}
	if len(res.failed) > 0 {
		b.WriteString("**The run had failures:**\n\n")
		for _, f := range res.failed {
			fmt.Fprintf(&b, "    %s\n", f)
		}
		b.WriteString("\n")
	}
	byName := map[string]*bench{}
	for _, bn := range res.benches {
		byName[bn.name] = bn
	}
	// One table per top-level benchmark, in run order.
	var groups []string
	members := map[string][]*bench{}
	for _, bn := range res.benches {
		top, _, _ := strings.Cut(bn.name, "/")
		if _, ok := members[top]; !ok {
			groups = append(groups, top)
		}
		members[top] = append(members[top], bn)
	}
	sort.SliceStable(groups, func(i, j int) bool { return rank(groups[i]) < rank(groups[j]) })
	for _, g := range groups {
		renderGroup(&b, g, members[g], byName)
	}
	return b.String()
}

// renderGroup writes the table of one top-level benchmark g, a row per
// sub-benchmark; byName finds the baseline a ratio column compares with.
func renderGroup(b *strings.Builder, g string, group []*bench, byName map[string]*bench) {
	cols := columns(group)
	runs := len(group[0].metrics["ns/op"])
	fmt.Fprintf(b, "#### %s (median of %d)\n\n", g, runs)
	b.WriteString("| benchmark | " + strings.Join(cols, " | ") + " |\n")
	b.WriteString("|---|" + strings.Repeat("---:|", len(cols)) + "\n")
	for _, bn := range group {
		row := []string{"`" + strings.TrimPrefix(strings.TrimPrefix(bn.name, g), "/") + "`"}
		if row[0] == "``" {
			row[0] = "`" + g + "`"
		}
		for _, c := range cols {
			switch c {
			case ratioCol:
				row = append(row, ratio(bn, byName[baseline(bn.name)]))
			case "ns/op":
				row = append(row, spread(bn.metrics[c]))
			default:
				if vs, ok := bn.metrics[c]; ok {
					row = append(row, format(c, median(vs)))
				} else {
					row = append(row, "")
				}
			}
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\n")
}

// spread is the median time with its range over the runs when they differ
// by more than 5%.
func spread(vs []float64) string {
	if len(vs) == 0 {
		return ""
	}
	m := median(vs)
	lo, hi := slices.Min(vs), slices.Max(vs)
	if len(vs) > 1 && m > 0 && (hi-lo)/m > 0.05 {
		return fmt.Sprintf("%s (%s–%s)", format("ns/op", m), format("ns/op", lo), format("ns/op", hi))
	}
	return format("ns/op", m)
}

// ratio is a row's median time per op over its flowgate row's: above 1 the
// row is slower than flowgate.
func ratio(bn, base *bench) string {
	if base == nil || len(bn.metrics["ns/op"]) == 0 || len(base.metrics["ns/op"]) == 0 {
		return ""
	}
	d := median(base.metrics["ns/op"])
	if d == 0 {
		return ""
	}
	return strconv.FormatFloat(median(bn.metrics["ns/op"])/d, 'f', 2, 64)
}

func rank(group string) int {
	if i := slices.Index(groupOrder, group); i >= 0 {
		return i
	}
	return len(groupOrder)
}
