package flow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// fakeTokenServer answers from a script: a fixed result or error, and
// records Acquire and Release calls.
type fakeTokenServer struct {
	mu        sync.Mutex
	res       TokenResult
	err       error
	instances int
	acquired  []TokenRequest
	released  []TokenResult
	relReqs   []TokenRequest // the requests of released, in order
}

func (f *fakeTokenServer) Acquire(_ context.Context, req TokenRequest) (TokenResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acquired = append(f.acquired, req)
	return f.res, f.err
}

func (f *fakeTokenServer) Release(_ context.Context, req TokenRequest, res TokenResult) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, res)
	f.relReqs = append(f.relReqs, req)
	return nil
}

func (f *fakeTokenServer) Instances() int { return f.instances }

func clusterEngine(t *testing.T, ts TokenServer, rules ...Rule) (*Engine, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	opts := []Option{WithClock(clk)}
	if ts != nil {
		opts = append(opts, WithTokenServer(ts))
	}
	e := NewEngine(opts...)
	if err := e.LoadRules(rules); err != nil {
		t.Fatal(err)
	}
	return e, clk
}

func cfw(id string, lvl Level, limit float64, threshold, fallback string) Rule {
	r := fw(id, "r", lvl, limit, time.Hour)
	r.Cluster = &ClusterSpec{Threshold: threshold, Fallback: fallback}
	return r
}

func TestClusterAllowedAndRefused(t *testing.T) {
	ts := &fakeTokenServer{res: TokenResult{Allowed: true, Refused: -1, Remaining: 7}, instances: 1}
	e, _ := clusterEngine(t, ts, cfw("c1", LevelUser, 10, "global", "deny"), cfw("c2", LevelUser, 20, "global", "deny"))
	p, err := e.Entry("r", WithUser("a"), WithTokens(2))
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := p.Quota(); q.Remaining != 7 {
		t.Fatalf("quota: %+v", q)
	}
	p.Exit()
	req := ts.acquired[0]
	if req.Resource != "r" || req.Level != LevelUser || req.Key != "a" || req.Tokens != 2 || len(req.Rules) != 2 ||
		req.Rules[1].ID != "c2" || req.Factor != 1 {
		t.Fatalf("request: %+v", req)
	}
	if len(ts.released) != 0 {
		t.Fatalf("rate rule released on Exit: %+v", ts.released)
	}
	ts.res = TokenResult{Refused: 1, RetryAfter: 3 * time.Second}
	_, err = e.Entry("r", WithUser("a"))
	var be *BlockError
	if !errors.As(err, &be) || be.RuleID != "c2" || be.Reason != ReasonClusterLimited || be.RetryAfter != 3*time.Second {
		t.Fatalf("refused: got %v", err)
	}
	if _, err := e.Entry("r"); err != nil { // no user: the user level does not apply
		t.Fatalf("no user: %v", err)
	}
	c := e.Snapshot().Cluster
	if c.Requests["passed"] != 1 || c.Requests["blocked"] != 1 || c.Requests["error"] != 0 {
		t.Fatalf("cluster stats: %+v", c)
	}
}

func TestClusterGrantGivenBackWhenLaterLevelRefuses(t *testing.T) {
	ts := &fakeTokenServer{res: TokenResult{Allowed: true, Refused: -1}, instances: 1}
	e, _ := clusterEngine(t, ts, cfw("cip", LevelIP, 10, "global", "deny"), fw("g", "r", LevelGlobal, 1, time.Hour))
	try(t, e, "r", WithIP("x"))
	if got := try(t, e, "r", WithIP("x")); got != "g" {
		t.Fatalf("got %q, want g", got)
	}
	if len(ts.released) != 1 {
		t.Fatalf("released %d grants, want 1 (the ip grant of the refused call)", len(ts.released))
	}
	if !ts.relReqs[0].Refund {
		t.Fatalf("release of a call a later level refused: Refund false, want true (rate tokens back too)")
	}
}

func TestClusterConcurrencyReleasedOnExit(t *testing.T) {
	ts := &fakeTokenServer{res: TokenResult{Allowed: true, Refused: -1, Lease: "L1"}, instances: 1}
	r := Rule{ID: "cc", Resource: "r", Algorithm: AlgoConcurrency, Limit: 5, Cluster: &ClusterSpec{}}
	e, _ := clusterEngine(t, ts, r)
	p, err := e.Entry("r")
	if err != nil {
		t.Fatal(err)
	}
	p.Exit()
	p.Exit()
	if len(ts.released) != 1 || ts.released[0].Lease != "L1" {
		t.Fatalf("released: %+v, want one release of lease L1", ts.released)
	}
	if ts.relReqs[0].Refund {
		t.Fatalf("release on Exit: Refund true, want false (rate tokens stay spent)")
	}
}

// A concurrency grant refunded (a later level refused) and then a permit
// of the same engine released on Exit: each Release says which it is.
func TestClusterRefundThenExitRelease(t *testing.T) {
	ts := &fakeTokenServer{res: TokenResult{Allowed: true, Refused: -1, Lease: "L"}, instances: 1}
	cc := Rule{ID: "cc", Resource: "r", Level: LevelIP, Algorithm: AlgoConcurrency, Limit: 5, Cluster: &ClusterSpec{}}
	e, _ := clusterEngine(t, ts, cc, fw("g", "r", LevelGlobal, 1, time.Hour))
	p, err := e.Entry("r", WithIP("x"))
	if err != nil {
		t.Fatal(err)
	}
	if got := try(t, e, "r", WithIP("x")); got != "g" {
		t.Fatalf("got %q, want g", got)
	}
	p.Exit()
	if len(ts.relReqs) != 2 || !ts.relReqs[0].Refund || ts.relReqs[1].Refund {
		t.Fatalf("releases: %+v, want a refund then a plain release", ts.relReqs)
	}
}

func TestClusterFallbacks(t *testing.T) {
	down := fmt.Errorf("dial: %w", ErrTokenServerUnavailable)
	tests := []struct {
		name      string
		rule      Rule
		instances int
		want      string
	}{
		{"allow", cfw("c", LevelGlobal, 2, "global", "allow"), 4, "pass pass pass pass pass"},
		{"deny", cfw("c", LevelGlobal, 2, "global", "deny"), 4, "c c c c c"},
		// local, threshold global: 8 across 4 instances is 2 here.
		{"local global", cfw("c", LevelGlobal, 8, "global", "local"), 4, "pass pass c c c"},
		// local, per_instance: Limit is already this instance's share.
		{"local per_instance", cfw("c", LevelGlobal, 3, "per_instance", "local"), 4, "pass pass pass c c"},
		{"local user level", cfw("c", LevelUser, 6, "global", "local"), 2, "pass pass pass c c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := &fakeTokenServer{err: down, instances: tt.instances}
			e, _ := clusterEngine(t, ts, tt.rule)
			if got := seq(t, e, "r", 5, WithUser("u")); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			c := e.Snapshot().Cluster
			if c.Requests["error"] != 5 || c.Fallbacks[tt.rule.Cluster.Fallback] != 5 {
				t.Fatalf("cluster stats: %+v", c)
			}
		})
	}
	_, err := func() (Permit, error) {
		e, _ := clusterEngine(t, &fakeTokenServer{err: down, instances: 1}, cfw("c", LevelGlobal, 2, "global", "deny"))
		return e.Entry("r")
	}()
	var be *BlockError
	if !errors.As(err, &be) || be.Reason != ReasonClusterUnavailable {
		t.Fatalf("deny: got %v", err)
	}
}

func TestClusterRuleWithoutTokenServerIsLocal(t *testing.T) {
	e, _ := clusterEngine(t, nil, cfw("c", LevelGlobal, 3, "global", "deny"))
	if got, want := seq(t, e, "r", 4), "pass pass pass c"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if rs := e.Snapshot().Rules[0]; !rs.Cluster || rs.EffectiveLimit != 3 {
		t.Fatalf("rule stats: %+v", rs)
	}
}
