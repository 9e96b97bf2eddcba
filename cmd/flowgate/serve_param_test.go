package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/remote"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// The served document: a per-tenant cluster limit with items, and a
// per-user one with an item, sliding_log so the counts are exact at any
// moment of the hour.
const serveParamRules = `{"rules": [
  {"id": "per-tenant", "resource": "POST /jobs", "level": "param", "param": "tenant",
   "algorithm": "sliding_log", "limit": 20, "window": "1h", "items": {"vip": 60, "trial": 4},
   "cluster": {"threshold": "global", "fallback": "deny"}},
  {"id": "per-user", "resource": "POST /jobs", "level": "user",
   "algorithm": "sliding_log", "limit": 50, "window": "1h", "items": {"bob": 5},
   "cluster": {"threshold": "global", "fallback": "deny"}}]}`

// TestServeParamRules runs `flowgate serve` on real Redis with a rules
// document holding a param rule with items, and 4 engines, each with its
// own client naming the rules by id: the served limits, items included,
// hold exactly across the engines, whatever the engines' own copies say.
// Their fallback is deny, so a call the service did not decide fails.
func TestServeParamRules(t *testing.T) {
	srv := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(path, []byte(serveParamRules), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sv := startServe(t, ctx, "-listen", "127.0.0.1:0", "-redis", srv.Addr, "-rules", path, "-timeout", "1s")
	// The engines' copies: other limits, no items; the served ones decide.
	local := []flow.Rule{
		{ID: "per-tenant", Resource: "POST /jobs", Level: flow.LevelParam, Param: "tenant", Algorithm: flow.AlgoSlidingLog,
			Limit: 1000, Window: time.Hour, Cluster: &flow.ClusterSpec{Fallback: "deny"}},
		{ID: "per-user", Resource: "POST /jobs", Level: flow.LevelUser, Algorithm: flow.AlgoSlidingLog,
			Limit: 1000, Window: time.Hour, Cluster: &flow.ClusterSpec{Fallback: "deny"}},
	}
	var es []*flow.Engine
	for range 4 {
		c, err := remote.New([]string{sv.addr}, remote.WithRuleIDs(true), remote.WithTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		e := flow.NewEngine(flow.WithTokenServer(c))
		if err := e.LoadRules(local); err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	for _, tc := range []struct {
		name string
		opts []flow.EntryOption
		want int64
	}{
		{"tenant acme", []flow.EntryOption{flow.WithParam("tenant", "acme")}, 20},
		{"tenant vip (item)", []flow.EntryOption{flow.WithParam("tenant", "vip")}, 60},
		{"tenant trial (item)", []flow.EntryOption{flow.WithParam("tenant", "trial")}, 4},
		{"user bob (item), no tenant", []flow.EntryOption{flow.WithUser("bob")}, 5},
		{"user carol, no tenant", []flow.EntryOption{flow.WithUser("carol")}, 50},
	} {
		passed, err := hammerEngines(es, 3, 30, tc.opts...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if passed != tc.want {
			t.Errorf("%s: %d passed across 4 engines, want exactly %d", tc.name, passed, tc.want)
		}
	}
	_, err := es[1].Entry("POST /jobs", flow.WithParam("tenant", "vip"))
	var be *flow.BlockError
	if !errors.As(err, &be) || be.Level != flow.LevelParam || be.RuleID != "per-tenant" || be.Reason != flow.ReasonClusterLimited {
		t.Fatalf("got %v, want a cluster refusal at the param level by per-tenant", err)
	}
	cancel()
	if got := <-sv.code; got != exitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", got, sv.stderr.String())
	}
}

// hammerEngines has goroutines per engine call POST /jobs calls times
// each, and returns how many passed; a refusal that is not the cluster
// limit's (an unanswered call, with fallback deny) is an error.
func hammerEngines(es []*flow.Engine, goroutines, calls int, opts ...flow.EntryOption) (int64, error) {
	var wg sync.WaitGroup
	var passed atomic.Int64
	var once sync.Once
	var first error
	for _, e := range es {
		for range goroutines {
			wg.Go(func() {
				for range calls {
					p, err := e.Entry("POST /jobs", opts...)
					var be *flow.BlockError
					switch {
					case err == nil:
						passed.Add(1)
						p.Exit()
					case errors.As(err, &be) && be.Reason == flow.ReasonClusterLimited:
					default:
						once.Do(func() { first = err })
						return
					}
				}
			})
		}
	}
	wg.Wait()
	return passed.Load(), first
}
