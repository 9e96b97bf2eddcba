package cluster

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
	"github.com/flowgate/flowgate/metrics"
)

// TestStatsCountEveryDecision: the server's counters and latency histogram
// (what metrics.WithCluster exports) and the engine's cluster statistics
// agree with the calls made.
func TestStatsCountEveryDecision(t *testing.T) {
	srv := redistest.Start(t)
	ts := newServer(t, srv.NewClient(nil))
	r := crule("r", uniq("stats"), flow.AlgoFixedWindow, 3, time.Hour)
	e := newEngine(t, ts, t0, r)
	passed, blocked := 0, 0
	for range 5 {
		p, err := e.Entry(r.Resource)
		switch {
		case err == nil:
			passed++
			p.Exit()
		case errors.Is(err, flow.ErrBlocked):
			blocked++
		default:
			t.Fatal(err)
		}
	}
	st := ts.Stats()
	if passed != 3 || st.Passed != 3 || st.Blocked != 2 || st.Errors != 0 || st.BreakerOpen {
		t.Fatalf("passed %d blocked %d; stats %+v", passed, blocked, st)
	}
	var src metrics.ClusterSource = ts
	h, sum := src.Latency()
	m := metrics.ClusterMetrics{Duration: h, DurationSum: sum, BreakerOpen: src.BreakerOpen()}
	var n uint64
	for _, c := range m.Duration.Counts {
		n += c
	}
	if n != 5 || len(m.Duration.Counts) != len(m.Duration.Bounds)+1 || m.DurationSum <= 0 || m.BreakerOpen {
		t.Fatalf("cluster metrics %+v: want 5 requests timed", m)
	}
	c := e.Snapshot().Cluster
	if c.Requests["passed"] != 3 || c.Requests["blocked"] != 2 || c.Requests["error"] != 0 {
		t.Fatalf("engine cluster stats %+v", c)
	}
}

// TestCloseStopsEverything: the background loop ends with Close, which is
// idempotent; nothing the server started outlives it.
func TestCloseStopsEverything(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.NewClient(nil)
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	ts, err := NewRedisTokenServer(rdb, WithLeasing(LeaseConfig{}), WithHeartbeat(time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r := crule("r", uniq("close"), flow.AlgoSlidingLog, 100, time.Hour)
	e := newEngine(t, ts, t0, r)
	for range 10 {
		p, err := e.Entry(r.Resource)
		if err != nil {
			t.Fatal(err)
		}
		p.Exit()
	}
	if st := ts.Stats(); st.LeaseLocal == 0 {
		t.Fatalf("no leased decisions: %+v", st)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The server closes the go-redis client it built; go-redis ends some
	// of that client's goroutines just after its Close returns.
	for start := time.Now(); runtime.NumGoroutine() > before && time.Since(start) < time.Second; {
		time.Sleep(5 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", after, before, buf[:runtime.Stack(buf, true)])
	}
}
