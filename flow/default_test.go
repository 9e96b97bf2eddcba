package flow

import (
	"testing"
	"time"
)

func TestDefaultEngine(t *testing.T) {
	if a, b := Default(), Default(); a != b {
		t.Fatal("Default returned two engines")
	}
	// The process-wide engine starts with no rules: every call passes.
	p, err := Entry("anything", WithUser("u"))
	if err != nil {
		t.Fatalf("Entry on the default engine: %v", err)
	}
	p.Exit()
}

func TestRulesReturnsACopy(t *testing.T) {
	spec := &ClusterSpec{Threshold: "global", Fallback: "allow"}
	in := []Rule{{ID: "a", Resource: "r", Limit: 1, Cluster: spec}}
	e, _ := newTestEngine(t, in...)
	in[0].Limit = 99
	spec.Fallback = "deny"
	got := e.Rules()
	if got[0].Limit != 1 || got[0].Cluster.Fallback != "allow" {
		t.Fatalf("engine rules follow the caller's slice: %+v %+v", got[0], *got[0].Cluster)
	}
	got[0].Cluster.Fallback = "local"
	if e.Rules()[0].Cluster.Fallback != "allow" {
		t.Fatal("Rules() shares the cluster spec")
	}
}

func TestStatsWindowOption(t *testing.T) {
	e := NewEngine(WithStatsWindow(5*time.Second, 5), WithStatsWindow(0, 3)) // the invalid one is ignored
	if err := e.LoadRules([]Rule{{ID: "a", Resource: "r", Limit: 1}}); err != nil {
		t.Fatal(err)
	}
	if span := e.Snapshot().Resources[0].Recent.Span; span != 5*time.Second {
		t.Fatalf("Recent.Span: got %v, want 5s", span)
	}
}
