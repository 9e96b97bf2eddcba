package flow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// TestClusterOutageLogsChangesNotCalls: an outage of many calls logs one
// line when it starts, a summary every 10s while it lasts and one line when
// the token server answers again; never one per call.
func TestClusterOutageLogsChangesNotCalls(t *testing.T) {
	var buf bytes.Buffer
	ts := &fakeTokenServer{instances: 1, err: errors.Join(ErrTokenServerUnavailable, errors.New("dial refused"))}
	clk := clock.NewFake(t0)
	e := NewEngine(WithClock(clk), WithTokenServer(ts), WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	if err := e.LoadRules([]Rule{cfw("c", LevelGlobal, 1e9, "global", "allow")}); err != nil {
		t.Fatal(err)
	}
	enter := func(n int) {
		for range n {
			p, err := e.Entry("r")
			if err != nil {
				t.Fatalf("allow fallback refused: %v", err)
			}
			p.Exit()
		}
	}
	enter(500)
	clk.Advance(5 * time.Second)
	enter(500)
	clk.Advance(6 * time.Second) // 11s into the outage: one summary
	enter(500)
	ts.mu.Lock()
	ts.err, ts.res = nil, TokenResult{Allowed: true, Refused: -1}
	ts.mu.Unlock()
	enter(500)
	got := strings.Count(buf.String(), "\n")
	for _, want := range []string{"token server unavailable", "still unavailable", "failed_calls=1500", "answers again"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}
	if got != 3 {
		t.Errorf("%d log lines for 2000 calls, want 3 (start, one summary, end):\n%s", got, buf.String())
	}
}

// TestClusterQuotaFromTightestRule: with two cluster rules at a level, the
// token server's Remaining is credited to the one with the lower rate.
func TestClusterQuotaFromTightestRule(t *testing.T) {
	loose := cfw("loose", LevelGlobal, 1000, "global", "deny")
	tight := cfw("tight", LevelGlobal, 10, "global", "deny")
	ts := &fakeTokenServer{instances: 1, res: TokenResult{Allowed: true, Refused: -1, Remaining: 3}}
	e, _ := clusterEngine(t, ts, loose, tight)
	p, err := e.Entry("r")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Exit()
	q, ok := p.Quota()
	if !ok || q.RuleID != "tight" || q.Limit != 10 || q.Remaining != 3 {
		t.Errorf("quota %+v (%v), want rule tight, limit 10, remaining 3", q, ok)
	}
}

// BenchmarkClusterFallbackLocal is a call decided by the local fallback
// while the token server is down, from every P: no lock, no log line.
func BenchmarkClusterFallbackLocal(b *testing.B) {
	e := NewEngine(WithTokenServer(downServer{}), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err := e.LoadRules([]Rule{cfw("c", LevelGlobal, 1e12, "global", "local")}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if p, err := e.Entry("r"); err == nil {
				p.Exit()
			}
		}
	})
}

// downServer is a token server that is always unavailable, and records
// nothing (so a benchmark measures the engine).
type downServer struct{}

func (downServer) Acquire(context.Context, TokenRequest) (TokenResult, error) {
	return TokenResult{}, ErrTokenServerUnavailable
}
func (downServer) Release(context.Context, TokenRequest, TokenResult) error { return nil }
func (downServer) Instances() int                                           { return 4 }

// TestClusterLocalTokenBucketStartsEmpty: a token_bucket cluster rule's
// local bucket fills up while Redis answers; when an outage begins it is
// emptied, so the instance admits its share of the rate from then on, not
// a burst on top of what Redis just admitted.
func TestClusterLocalTokenBucketStartsEmpty(t *testing.T) {
	r := Rule{ID: "c", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 8, Window: time.Second,
		Cluster: &ClusterSpec{Threshold: "global", Fallback: "local"}}
	ts := &fakeTokenServer{res: TokenResult{Allowed: true, Refused: -1}, instances: 4}
	e, clk := clusterEngine(t, ts, r)
	if got := seq(t, e, "r", 3); got != "pass pass pass" {
		t.Fatalf("healthy: got %q", got)
	}
	clk.Advance(10 * time.Second) // the local bucket (2/s, burst 2) is full
	ts.mu.Lock()
	ts.err = fmt.Errorf("dial: %w", ErrTokenServerUnavailable)
	ts.mu.Unlock()
	// Emptied: only the one permit Guava's bucket grants on credit.
	if got := seq(t, e, "r", 4); got != "pass c c c" {
		t.Fatalf("outage start: got %q, want one pass (a full bucket would pass 3)", got)
	}
	// From then on the share of the rate (2/s) plus Guava's one permit on
	// credit: 3 over [start, start+1s], where a full bucket passes 5.
	clk.Advance(time.Second)
	if got := seq(t, e, "r", 4); got != "pass pass c c" {
		t.Fatalf("1s into the outage: got %q, want 2 (one second of 2/s)", got)
	}
	// Still the same outage: no second drain, the rate goes on.
	clk.Advance(time.Second)
	if got := seq(t, e, "r", 4); got != "pass pass c c" {
		t.Fatalf("2s into the outage: got %q, want 2 (one second of 2/s)", got)
	}
}
