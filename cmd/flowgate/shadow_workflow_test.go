package main

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/etcdtest"
	"github.com/flowgate/flowgate/rules"
	"github.com/flowgate/flowgate/rules/etcdsource"
)

// TestShadowWorkflow is the README's workflow on a real etcd: push a
// document in shadow, see the engine let everything through while it
// counts what it would refuse, diff the flip, push it, and see the same
// rule enforce from the state the shadow rule built.
func TestShadowWorkflow(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	const key = "/svc/rules"
	const rule = `{"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": 3, "window": "1h"}`
	shadowDoc := writeFile(t, dir, "shadow.json", `{"shadow": true, "rules": [`+rule+`]}`)
	enforceDoc := writeFile(t, dir, "enforce.json", `{"rules": [`+rule+`]}`)
	flags := []string{"--etcd", srv.Endpoint, "--key", key}

	code, out, errOut := runCLI(t, "", append(append([]string{"rules", "push"}, flags...), shadowDoc)...)
	if code != exitOK || !strings.Contains(out, "(1 rules, 1 in shadow)") {
		t.Fatalf("push in shadow: exit %d, %q %q", code, out, errOut)
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	eng := flow.NewEngine(flow.WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	applied := make(chan rules.Event, 16)
	s, err := rules.Sync(context.Background(), eng, []rules.Source{etcdsource.New(cli, key)},
		rules.WithOnReload(func(ev rules.Event) { applied <- ev }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	<-applied

	for i := range 5 {
		p, err := eng.Entry("r")
		if err != nil {
			t.Fatalf("call %d in shadow: %v", i, err)
		}
		p.Exit()
	}
	if r := eng.Snapshot().Rules[0]; !r.Shadow || r.ShadowBlocked != 2 {
		t.Fatalf("in shadow: Shadow %v ShadowBlocked %d, want true 2", r.Shadow, r.ShadowBlocked)
	}

	code, out, _ = runCLI(t, "", append(append([]string{"rules", "diff"}, flags...), enforceDoc)...)
	if code != exitOK || !strings.Contains(out, "~ a: shadow true -> (none)") {
		t.Errorf("diff of the flip: exit %d, %q", code, out)
	}
	if code, out, errOut := runCLI(t, "", append(append([]string{"rules", "push"}, flags...), enforceDoc)...); code != exitOK ||
		strings.Contains(out, "shadow") {
		t.Fatalf("push to enforce: exit %d, %q %q", code, out, errOut)
	}
	select {
	case ev := <-applied:
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the flip was not applied within 30s")
	}
	// The window the shadow rule filled is the one that now enforces.
	if _, err := eng.Entry("r"); err == nil {
		t.Fatal("after the flip: a call passed a full window")
	}
	if r := eng.Snapshot().Rules[0]; r.Shadow {
		t.Errorf("after the flip: still in shadow")
	}
}
