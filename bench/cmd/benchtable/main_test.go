package main

import (
	"strings"
	"testing"
)

const sample = `# nproc: 2
# go: go1.26.8
goos: linux
cpu: AMD EPYC
BenchmarkPeersPass/flowgate-2   	 1000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkPeersPass/xrate-2      	 1000	        50.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkPeersPass/flowgate-2   	 1000	       300.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkPeersPass/xrate-2      	 1000	        70.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkPeersPass/flowgate-2   	 1000	       200.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkPeersPass/xrate-2      	 1000	        60.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkCluster/redis_rate/hot-key-2 	 10	 13000 ns/op	 76000 decisions/s	 200 p50-us	 700 B/op	 21 allocs/op
BenchmarkCluster/flowgate/hot-key-2   	 10	 14000 ns/op	 70000 decisions/s	 230 p50-us	 600 B/op	 12 allocs/op
    cluster_bench_test.go:1: a log line
PASS
`

func TestParseMediansAndRatios(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(res.benches), 4; got != want {
		t.Fatalf("benches: got %d, want %d", got, want)
	}
	fg := res.benches[0]
	if got, want := fg.name, "PeersPass/flowgate"; got != want {
		t.Errorf("name: got %q, want %q", got, want)
	}
	if got, want := median(fg.metrics["ns/op"]), 200.0; got != want {
		t.Errorf("median: got %v, want %v", got, want)
	}
	if got, want := baseline("Cluster/redis_rate/hot-key"), "Cluster/flowgate/hot-key"; got != want {
		t.Errorf("baseline: got %q, want %q", got, want)
	}
	out := render(res)
	for _, want := range []string{
		"- nproc: 2",
		"- go test cpu: AMD EPYC",
		"#### PeersPass (median of 3)",
		"| `xrate` | 60.0 (50.0–70.0) | 0.30 |", // 60 / 200
		"| `redis_rate/hot-key` | 13000 | 0.93 | 76000 | 200.0 | 700 | 21 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q; got\n%s", want, out)
		}
	}
}

func TestSplice(t *testing.T) {
	doc := "intro\n" + startMarker + "\nold table\n" + endMarker + "\nafter\n"
	got, err := splice([]byte(doc), "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "intro\n" + startMarker + "\nnew table\n" + endMarker + "\nafter\n"
	if string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := splice([]byte("no markers"), "x"); err == nil {
		t.Error("splice without markers: got nil error")
	}
}
