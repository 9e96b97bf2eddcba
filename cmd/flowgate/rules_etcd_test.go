package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/etcdtest"
	"github.com/flowgate/flowgate/rules"
	"github.com/flowgate/flowgate/rules/etcdsource"
)

func limitRule(limit int) string {
	return fmt.Sprintf(`{"rules": [{"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": %d}]}`, limit)
}

func TestRulesPushGetDiff(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	addr := strings.TrimPrefix(srv.Endpoint, "http://")
	flags := []string{"--etcd", addr, "--key", "/svc/rules"}
	cmd := func(sub string, args ...string) []string {
		return append(append([]string{"rules", sub}, flags...), args...)
	}

	// A bad document is refused before etcd is touched, with validate's
	// messages and exit code.
	bad := writeFile(t, dir, "bad.json", `{"rules": [{"id": "x", "resource": "r", "algorithm": "token_bucket", "limit": 0, "window": "10x"}]}`)
	vcode, vout, _ := runCLI(t, "", "validate", bad)
	code, out, _ := runCLI(t, "", cmd("push", bad)...)
	if code != exitInvalid || code != vcode || out != vout {
		t.Errorf("push of a bad file: exit %d, stdout\n%s\nwant validate's exit %d and stdout\n%s", code, out, vcode, vout)
	}
	if code, out, _ := runCLI(t, "", "rules", "push", "--etcd", "127.0.0.1:1", bad); code != exitInvalid || out != vout {
		t.Errorf("push of a bad file with etcd unreachable: exit %d, stdout %q; want validate's answer", code, out)
	}
	if code, _, errOut := runCLI(t, "", cmd("get")...); code != exitFailed || !strings.Contains(errOut, "/svc/rules: not found") {
		t.Errorf("get after a refused push: exit %d, stderr %q; want %d and not found", code, errOut, exitFailed)
	}

	v1 := writeFile(t, dir, "v1.json", limitRule(10))
	code, out, errOut := runCLI(t, "", cmd("push", v1)...)
	if code != exitOK || !strings.Contains(out, "pushed "+v1+" to /svc/rules: revision ") {
		t.Fatalf("push: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", cmd("get")...)
	if code != exitOK || out != limitRule(10) || !strings.Contains(errOut, "/svc/rules: revision ") {
		t.Fatalf("get: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var rev int64
	fmt.Sscanf(errOut, "/svc/rules: revision %d", &rev)

	v2 := writeFile(t, dir, "v2.json", `{"rules": [{"id": "a", "resource": "r", "algorithm": "fixed_window", "limit": 20},
		{"id": "b", "resource": "r", "algorithm": "concurrency", "limit": 3}]}`)
	code, out, _ = runCLI(t, "", cmd("diff", v2)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{fmt.Sprintf("/svc/rules (revision %d) -> %s: 2 changes", rev, v2), "~ a: limit 10 -> 20", "+ b"}
	if code != exitOK || !slices.Equal(lines, want) {
		t.Errorf("diff: exit %d, lines\n%q\nwant\n%q", code, lines, want)
	}

	// The compare-and-swap: a push against the revision read succeeds once;
	// a second push against the same revision finds the key moved.
	stale := fmt.Sprint(rev)
	if code, out, errOut := runCLI(t, "", cmd("push", "--revision", stale, v2)...); code != exitOK {
		t.Fatalf("push --revision %s: exit %d, %q %q", stale, code, out, errOut)
	}
	code, _, errOut = runCLI(t, "", cmd("push", "--revision", stale, v1)...)
	if code != exitFailed || !strings.Contains(errOut, "/svc/rules changed since revision "+stale) {
		t.Errorf("push against a stale revision: exit %d, stderr %q; want %d and 'changed since'", code, errOut, exitFailed)
	}
	if _, out, _ := runCLI(t, "", cmd("get")...); !strings.Contains(out, `"id": "b"`) {
		t.Errorf("a refused swap wrote anyway: %q", out)
	}
	if code, _, errOut := runCLI(t, "", cmd("push", "--force", v1)...); code != exitOK {
		t.Errorf("push --force: exit %d, stderr %q", code, errOut)
	}
	if _, out, _ := runCLI(t, "", cmd("get")...); out != limitRule(10) {
		t.Errorf("after --force: get = %q, want v1", out)
	}

	down := []string{"rules", "get", "--etcd", "127.0.0.1:1", "--timeout", "300ms"}
	if code, _, errOut := runCLI(t, "", down...); code != exitFailed || !strings.Contains(errOut, "etcd 127.0.0.1:1") {
		t.Errorf("get from an unreachable etcd: exit %d, stderr %q", code, errOut)
	}
}

// fleetEngine is one of several services whose engines follow the key.
type fleetEngine struct {
	eng     *flow.Engine
	s       *rules.Syncer
	applied chan rules.Event
}

// TestPushToAppliedOnThreeEngines measures the time from the start of
// `flowgate rules push` to the document applied on 3 engines, each with its
// own client and a source with the default settings, and what they do while
// etcd is down: they keep deciding with the last good rules, report the
// outage, and follow pushes again after a restart.
func TestPushToAppliedOnThreeEngines(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	const key = "/fleet/rules"
	push := func(limit int) (time.Time, string) {
		t.Helper()
		path := writeFile(t, dir, fmt.Sprintf("v%d.json", limit), limitRule(limit))
		start := time.Now()
		code, out, errOut := runCLI(t, "", "rules", "push", "--etcd", srv.Endpoint, "--key", key, path)
		if code != exitOK {
			t.Fatalf("push: exit %d, %q %q", code, out, errOut)
		}
		doc, err := rules.Parse([]byte(limitRule(limit)))
		if err != nil {
			t.Fatal(err)
		}
		return start, doc.Version()
	}
	push(1)

	fleet := make([]*fleetEngine, 3)
	for i := range fleet {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}}) // as a service would
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		f := &fleetEngine{eng: flow.NewEngine(), applied: make(chan rules.Event, 256)}
		f.s, err = rules.Sync(context.Background(), f.eng, []rules.Source{etcdsource.New(cli, key)},
			rules.WithOnReload(func(ev rules.Event) { f.applied <- ev }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.s.Close() })
		<-f.applied // the first load
		fleet[i] = f
	}
	// wait returns when f reports an event that satisfies ok.
	wait := func(f *fleetEngine, what string, ok func(rules.Event) bool) rules.Event {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev := <-f.applied:
				if ok(ev) {
					return ev
				}
			case <-timeout:
				t.Fatalf("no %s within 30s; status %+v", what, f.s.Status())
			}
		}
	}
	measure := func(rounds, base int) []time.Duration {
		var lat []time.Duration
		for i := range rounds {
			start, version := push(base + i)
			for _, f := range fleet {
				ev := wait(f, "applied push", func(ev rules.Event) bool { return ev.Err == nil && ev.Version == version })
				lat = append(lat, ev.Time.Sub(start))
			}
		}
		return lat
	}
	report := func(what string, lat []time.Duration) {
		slices.Sort(lat)
		t.Logf("%s: push to applied on 3 engines, %d samples: p50 %v, max %v", what, len(lat),
			lat[len(lat)/2].Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
	}
	report("etcd up", measure(20, 2))

	// A resource over its limit stays refused while etcd is down.
	blocked := func(f *fleetEngine) bool {
		for range 100 {
			p, err := f.eng.Entry("r")
			if err != nil {
				return true
			}
			p.Exit()
		}
		return false
	}
	killed := time.Now()
	srv.Kill()
	for _, f := range fleet {
		ev := wait(f, "outage report", func(ev rules.Event) bool { return ev.Err != nil })
		t.Logf("outage reported %v after the kill: %v", ev.Time.Sub(killed).Round(time.Millisecond), ev.Err)
		if !blocked(f) {
			t.Error("an engine stopped enforcing its rules while etcd was down")
		}
		if got := f.s.Document().Rules()[0].Limit; got != 21 {
			t.Errorf("limit in force while etcd is down = %v, want the last pushed 21", got)
		}
	}
	restarted := time.Now()
	srv.Restart()
	for _, f := range fleet {
		ev := wait(f, "recovery", func(ev rules.Event) bool { return ev.Err == nil })
		t.Logf("source OK again %v after the restart returned", ev.Time.Sub(restarted).Round(time.Millisecond))
	}
	report("after a restart", measure(5, 100))
}

// TestConcurrentPushes: two people push at once, 25 times each. Every push
// either writes (and is counted in the key's version) or is refused with
// exit 3 and writes nothing.
func TestConcurrentPushes(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	const key = "/race/rules"
	var files [2][]string
	for w := range 2 {
		for i := range 25 {
			files[w] = append(files[w], writeFile(t, dir, fmt.Sprintf("w%d-%d.json", w, i), limitRule(1000*(w+1)+i)))
		}
	}
	results := make(chan int, 50)
	done := make(chan struct{})
	for w := range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			for _, f := range files[w] {
				code, _, _ := runCLI(t, "", "rules", "push", "--etcd", srv.Endpoint, "--key", key, f)
				results <- code
			}
		}()
	}
	<-done
	<-done
	close(results)
	wrote, refused := 0, 0
	for code := range results {
		switch code {
		case exitOK:
			wrote++
		case exitFailed:
			refused++
		default:
			t.Errorf("push exit %d, want 0 or 3", code)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := srv.Client().Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get: %v %v", resp, err)
	}
	if got := resp.Kvs[0].Version; got != int64(wrote) {
		t.Errorf("the key was written %d times, but %d pushes reported success (%d refused)", got, wrote, refused)
	}
	t.Logf("2 concurrent pushers, 50 pushes: %d written, %d refused by the compare-and-swap", wrote, refused)
}
