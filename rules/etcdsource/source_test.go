package etcdsource

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/etcdtest"
	"github.com/flowgate/flowgate/rules"
)

const key = "/flowgate/rules"

// limitDoc is a one-rule document whose limit tells versions apart.
func limitDoc(limit int) string {
	return fmt.Sprintf(`{"rules": [{"id": "api-global", "resource": "api", "algorithm": "fixed_window", "limit": %d, "window": "1m"}]}`, limit)
}

// rig is an engine kept in step with key by a Syncer, and the events it
// reported.
type rig struct {
	t      *testing.T
	eng    *flow.Engine
	s      *rules.Syncer
	events chan rules.Event
}

// fast are the source options of the outage tests: outages noticed in
// ~100ms. watchOnly leaves changes to the watch alone (no check reads), so
// a test that uses it proves the watch delivers them.
var fast = []Option{WithCheckInterval(100 * time.Millisecond), WithRequestTimeout(300 * time.Millisecond),
	WithRetryInterval(50 * time.Millisecond)}
var watchOnly = []Option{WithCheckInterval(time.Hour), WithRetryInterval(50 * time.Millisecond)}

func startRig(t *testing.T, sources ...rules.Source) *rig {
	t.Helper()
	r := &rig{t: t, eng: flow.NewEngine(), events: make(chan rules.Event, 1024)}
	var s *rules.Syncer
	var err error
	// The first load is not what these tests are about: on a loaded
	// machine etcd may miss the fast options' 300ms request timeout, so a
	// start that found etcd unreachable is tried again, a few times.
	for try := 0; try < 3; try++ {
		s, err = rules.Sync(context.Background(), r.eng, sources, rules.WithStartTimeout(5*time.Second),
			rules.WithOnReload(func(ev rules.Event) { r.events <- ev }))
		if err == nil || !strings.Contains(err.Error(), "unreachable") {
			break
		}
		t.Logf("Sync try %d: %v", try+1, err)
	}
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	r.s = s
	return r
}

// waitFor returns the first event that satisfies ok, failing after 20s.
func (r *rig) waitFor(what string, ok func(rules.Event) bool) rules.Event {
	r.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-r.events:
			if ok(ev) {
				return ev
			}
		case <-deadline:
			r.t.Fatalf("no event for %s within 20s; status %+v", what, r.s.Status())
		}
	}
}

// waitLimit waits until the document in force has the given limit.
func (r *rig) waitLimit(limit int) {
	r.t.Helper()
	r.waitFor(fmt.Sprintf("limit %d", limit), func(ev rules.Event) bool {
		return ev.Err == nil && ev.Doc != nil && ev.Doc.Rules()[0].Limit == float64(limit)
	})
	if got := r.limit(); got != limit {
		r.t.Fatalf("limit in force = %d, want %d", got, limit)
	}
}

func (r *rig) limit() int {
	return int(r.s.Document().Rules()[0].Limit)
}

func put(t *testing.T, c *clientv3.Client, value string) int64 {
	t.Helper()
	var rev int64
	write(t, "put", func(ctx context.Context) error {
		resp, err := c.Put(ctx, key, value)
		if err == nil {
			rev = resp.Header.Revision
		}
		return err
	})
	return rev
}

// write runs an etcd write, again when etcd answers that it timed out (a
// loaded machine: its commit waited for the disk); the writes here can be
// repeated without changing what they leave.
func write(t *testing.T, what string, do func(context.Context) error) {
	t.Helper()
	var err error
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = do(ctx)
		cancel()
		if rpctypes.Error(err) != rpctypes.ErrTimeout {
			break
		}
		t.Logf("%s: %v; trying again", what, err)
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestFirstLoadUpdatesAndBadDocument: the first load, a valid update, a bad
// document (refused with the path to each problem; the last good rules
// stay), a deleted key (the same), and a good document after them.
func TestFirstLoadUpdatesAndBadDocument(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client()
	put(t, c, limitDoc(3))
	r := startRig(t, New(srv.Client(), key, watchOnly...))
	if got := r.limit(); got != 3 {
		t.Fatalf("first load: limit %d, want 3", got)
	}
	if st := r.s.Status(); !st.OK || st.Source != "etcd "+key || st.Reloads != 1 {
		t.Errorf("status after first load = %+v", st)
	}

	put(t, c, limitDoc(5))
	r.waitLimit(5)

	rev := put(t, c, `{"rules": [{"id": "x", "resource": "api", "algorithm": "fixed_window", "limit": -1, "window": "1x"}]}`)
	ev := r.waitFor("the bad document refused", func(ev rules.Event) bool { return ev.Err != nil })
	for _, want := range []string{"etcd " + key, `rules[0] (id "x"): limit`, `rules[0] (id "x"): window`} {
		if !strings.Contains(ev.Err.Error(), want) {
			t.Errorf("error %q lacks %q", ev.Err, want)
		}
	}
	if got := r.limit(); got != 5 {
		t.Errorf("after a bad document: limit %d, want the last good 5", got)
	}
	st := r.s.Status()
	if st.OK || st.LastError == nil || st.Failures != 1 {
		t.Errorf("status after a bad document = %+v, want not OK with LastError", st)
	}
	if src := r.s.Sources()[0]; src.Revision != fmt.Sprint(rev) || src.OK {
		t.Errorf("source status = %+v, want revision %d, not OK", src, rev)
	}

	write(t, "delete", func(ctx context.Context) error {
		_, err := c.Delete(ctx, key)
		return err
	})
	ev = r.waitFor("the deletion refused", func(ev rules.Event) bool { return ev.Err != nil })
	if !strings.Contains(ev.Err.Error(), "deleted") {
		t.Errorf("error %q does not say the key was deleted", ev.Err)
	}
	if got := r.limit(); got != 5 {
		t.Errorf("after a deletion: limit %d, want the last good 5", got)
	}

	put(t, c, limitDoc(8))
	r.waitLimit(8)
}

// TestKilledAndRestarted: while etcd is down the rules stay and the status
// says etcd is unreachable; after a restart the source answers again and
// later updates arrive.
func TestKilledAndRestarted(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client()
	put(t, c, limitDoc(3))
	r := startRig(t, New(srv.Client(), key, fast...))

	srv.Kill()
	ev := r.waitFor("the outage", func(ev rules.Event) bool { return ev.Err != nil })
	if !strings.Contains(ev.Err.Error(), "unreachable") {
		t.Errorf("outage error %q does not say unreachable", ev.Err)
	}
	if got := r.limit(); got != 3 {
		t.Fatalf("while etcd is down: limit %d, want 3", got)
	}
	if st := r.s.Status(); st.OK || st.Version == "" {
		t.Errorf("status while down = %+v, want not OK with the version kept", st)
	}

	srv.Restart()
	r.waitFor("etcd answering again", func(ev rules.Event) bool { return ev.Err == nil })
	if st := r.s.Status(); !st.OK {
		t.Errorf("status after restart = %+v, want OK", st)
	}
	put(t, c, limitDoc(4))
	r.waitLimit(4)
	put(t, c, limitDoc(6))
	r.waitLimit(6)

	// Close leaves no goroutine of the source behind, even with a watch
	// whose creation waited through an outage.
	r.s.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "etcdsource.(*follower)") && !strings.Contains(stacks, "rules.(*Syncer).run") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left after Close:\n%s", stacks)
		}
		time.Sleep(10 * time.Millisecond) // waiting for goroutines to exit, not for logic
	}
}

// TestCompacted: a watch that resumes from a compacted revision reads the
// key again and delivers its newest document.
func TestCompacted(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client()
	first := put(t, c, limitDoc(1))
	put(t, c, limitDoc(2))
	last := put(t, c, limitDoc(7))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Compact(ctx, last); err != nil {
		t.Fatal(err)
	}
	src := New(srv.Client(), key, watchOnly...)
	src.from = first // as if it had read revision `first` before a disconnect
	r := startRig(t, src)
	if got := r.limit(); got != 7 {
		t.Fatalf("after compaction: limit %d, want the newest 7", got)
	}
	put(t, c, limitDoc(9))
	r.waitLimit(9)
}

// TestFallbackToFile: etcd unreachable at start-up, so the local file is in
// force; once etcd answers its document takes over.
func TestFallbackToFile(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client()
	put(t, c, limitDoc(7))
	path := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(path, []byte(limitDoc(2)), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	r := startRig(t, New(srv.Client(), key, fast...), rules.FileSource(path))
	if got, st := r.limit(), r.s.Status(); got != 2 || !strings.HasPrefix(st.Source, "file ") {
		t.Fatalf("etcd down at start: limit %d from %q, want 2 from the file", got, st.Source)
	}
	if src := r.s.Sources()[0]; src.OK || src.LastError == nil {
		t.Errorf("etcd source status = %+v, want not OK with the outage", src)
	}
	srv.Restart()
	r.waitLimit(7)
	if st := r.s.Status(); st.Source != "etcd "+key {
		t.Errorf("source in force = %q, want etcd", st.Source)
	}
}

// TestLargeDocumentWhole: a document of 2000 rules arrives whole, in one
// update, or not at all.
func TestLargeDocumentWhole(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client()
	put(t, c, limitDoc(3))
	r := startRig(t, New(srv.Client(), key, watchOnly...))
	var b strings.Builder
	b.WriteString(`{"rules": [`)
	const n = 2000
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"id": "r%d", "resource": "res%d", "level": "user", "algorithm": "token_bucket", "limit": %d, "burst": 40, "idleTTL": "5m"}`, i, i, i+1)
	}
	b.WriteString("]}")
	big, err := rules.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, b.String())
	ev := r.waitFor("the large document", func(ev rules.Event) bool { return ev.Version == big.Version() })
	if ev.Err != nil {
		t.Fatal(ev.Err)
	}
	if got := len(ev.Doc.Rules()); got != n {
		t.Fatalf("applied %d rules, want all %d in one update", got, n)
	}
	if got := len(r.eng.Rules()); got != n {
		t.Errorf("engine has %d rules, want %d", got, n)
	}
}
