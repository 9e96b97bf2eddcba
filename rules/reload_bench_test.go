package rules

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// bigDoc is a document of n rules over n/5 resources, every algorithm and
// level, with limits scaled by k so two values of k change every rule.
func bigDoc(n int, k float64) []byte {
	algos := []string{
		`"algorithm": "token_bucket", "burst": `,
		`"algorithm": "warm_up", "warmup": "10s", "coldFactor": 3`,
		`"algorithm": "leaky_bucket", "maxWait": "10ms"`,
		`"algorithm": "fixed_window", "window": "1m"`,
		`"algorithm": "sliding_window", "buckets": 20`,
		`"algorithm": "sliding_log", "window": "10s"`,
		`"algorithm": "concurrency"`,
	}
	levels := []string{"global", "user", "ip"}
	var b strings.Builder
	b.WriteString(`{"rules": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		limit := k * float64(1000+i%100)
		fmt.Fprintf(&b, `{"id": "r%d", "resource": "res-%d", "level": %q, "limit": %g, `,
			i, i/5, levels[i%3], limit)
		b.WriteString(algos[i%len(algos)])
		if i%len(algos) == 0 {
			fmt.Fprintf(&b, "%g", 2*limit)
		}
		if i%3 != 0 {
			b.WriteString(`, "maxKeys": 10000, "idleTTL": "1m"`)
		}
		b.WriteString("}")
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func BenchmarkReload10000(b *testing.B) {
	docs := [2][]byte{bigDoc(10000, 1), bigDoc(10000, 2)}
	b.Run("Parse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(docs[0])))
		for b.Loop() {
			if _, err := Parse(docs[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	parsed := [2][]flow.Rule{}
	for i, d := range docs {
		doc, err := Parse(d)
		if err != nil {
			b.Fatal(err)
		}
		parsed[i] = doc.Rules()
	}
	b.Run("LoadRules/all-changed", func(b *testing.B) {
		eng := flow.NewEngine()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := eng.LoadRules(parsed[i%2]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("LoadRules/unchanged", func(b *testing.B) {
		eng := flow.NewEngine()
		if err := eng.LoadRules(parsed[0]); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := eng.LoadRules(parsed[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parse+LoadRules", func(b *testing.B) {
		eng := flow.NewEngine()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			doc, err := Parse(docs[i%2])
			if err != nil {
				b.Fatal(err)
			}
			if err := eng.LoadRules(doc.Rules()); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// entryLatencies runs workers goroutines calling eng.Entry on resources that
// have rules while reloads full reloads of 10 000 rules happen, and returns
// every Entry latency and, per reload, how many Entry calls finished while
// it was running. With apply false the documents are parsed but not loaded:
// the same allocation and CPU load without LoadRules, as a baseline.
func entryLatencies(tb testing.TB, workers, reloads int, apply bool) (lat []time.Duration, during []int64, reloadTime []time.Duration) {
	docs := [2][]byte{bigDoc(10000, 1), bigDoc(10000, 2)}
	eng := flow.NewEngine()
	first, err := Parse(docs[0])
	if err != nil {
		tb.Fatal(err)
	}
	if err := eng.LoadRules(first.Rules()); err != nil {
		tb.Fatal(err)
	}
	var stop atomic.Bool
	var calls atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1<<16)
			for i := 0; !stop.Load(); i++ {
				// res-0 .. res-99: token buckets, windows, logs, concurrency;
				// passes and blocks both count.
				res := resNames[(i+w*7)%len(resNames)]
				start := time.Now()
				p, err := eng.Entry(res, flow.WithUser("u"), flow.WithIP("10.0.0.1"))
				if err == nil {
					p.Exit()
				}
				local = append(local, time.Since(start))
				calls.Add(1)
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	for i := range reloads {
		doc, err := Parse(docs[(i+1)%2])
		if err != nil {
			tb.Fatal(err)
		}
		before := calls.Load()
		start := time.Now()
		if apply {
			if err := eng.LoadRules(doc.Rules()); err != nil {
				tb.Fatal(err)
			}
		}
		reloadTime = append(reloadTime, time.Since(start))
		during = append(during, calls.Load()-before)
	}
	stop.Store(true)
	wg.Wait()
	return lat, during, reloadTime
}

var resNames = func() []string {
	out := make([]string, 100)
	for i := range out {
		out[i] = fmt.Sprintf("res-%d", i)
	}
	return out
}()

// TestEntryNotStalledByReload checks that Entry keeps completing while the
// engine swaps 10 000 rules (LoadRules builds the new rule set aside and
// publishes it with one atomic store), and logs the latencies measured.
func TestEntryNotStalledByReload(t *testing.T) {
	if testing.Short() {
		t.Skip("reloads 10 000 rules 10 times")
	}
	base, _, _ := entryLatencies(t, 1, 10, false)
	slices.Sort(base)
	lat, during, reloadTime := entryLatencies(t, 1, 10, true)
	slices.Sort(lat)
	slices.Sort(reloadTime)
	progressed := 0
	for _, n := range during {
		if n > 0 {
			progressed++
		}
	}
	t.Logf("Entry calls: %d; latency p50 %v, p99 %v, p99.9 %v, worst %v", len(lat),
		pct(lat, 0.50), pct(lat, 0.99), pct(lat, 0.999), lat[len(lat)-1])
	t.Logf("baseline (parse only): %d calls; p50 %v, p99 %v, p99.9 %v, worst %v", len(base),
		pct(base, 0.50), pct(base, 0.99), pct(base, 0.999), base[len(base)-1])
	t.Logf("LoadRules(10 000 rules): median %v, worst %v; Entry calls completed during each: %v",
		pct(reloadTime, 0.5), reloadTime[len(reloadTime)-1], during)
	// On a busy machine a reload may run while the Entry goroutine is not
	// scheduled at all; if Entry waited for reloads it would finish nothing
	// during any of them.
	if progressed < len(during)/2 {
		t.Errorf("Entry made progress during only %d of %d reloads", progressed, len(during))
	}
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// BenchmarkEntryDuringReload reports Entry's worst and p99.9 latency while
// 10 000 rules are reloaded back to back.
func BenchmarkEntryDuringReload(b *testing.B) {
	for b.Loop() {
		lat, _, reloadTime := entryLatencies(b, 1, 10, true)
		slices.Sort(lat)
		slices.Sort(reloadTime)
		b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "worst-entry-ns")
		b.ReportMetric(float64(pct(lat, 0.999).Nanoseconds()), "p99.9-entry-ns")
		b.ReportMetric(float64(pct(lat, 0.5).Nanoseconds()), "p50-entry-ns")
		b.ReportMetric(float64(pct(reloadTime, 0.5).Nanoseconds()), "reload-ns")
	}
}
