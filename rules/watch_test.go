package rules

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// limitDoc is a document whose rule lets each user through limit times an
// hour, so the limit in force can be read off eng.Entry.
func limitDoc(limit int) string {
	return fmt.Sprintf(`{"rules": [{"id": "per-user", "resource": "api", "level": "user",
  "algorithm": "fixed_window", "limit": %d, "window": "1h"}]}`, limit)
}

func versionOf(t *testing.T, doc string) string {
	t.Helper()
	d, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d.Version()
}

var userSeq atomic.Int64

// limitInForce counts how many calls a fresh user gets through "api": the
// limit of the rule in force (0 < limit < 50), or 50 when there is no rule.
func limitInForce(t *testing.T, eng *flow.Engine) int {
	t.Helper()
	user := fmt.Sprintf("u%d", userSeq.Add(1))
	passed := 0
	for range 50 {
		p, err := eng.Entry("api", flow.WithUser(user))
		if err != nil {
			if !errors.Is(err, flow.ErrBlocked) {
				t.Fatalf("Entry: %v", err)
			}
			continue
		}
		p.Exit()
		passed++
	}
	return passed
}

// watchRig is a watched rules file in a temp directory, with the events the
// watcher reports.
type watchRig struct {
	t      *testing.T
	dir    string
	path   string
	eng    *flow.Engine
	w      *Watcher
	events chan Event
}

func newRig(t *testing.T, initial string, opts ...WatchOption) *watchRig {
	t.Helper()
	r := &watchRig{t: t, dir: t.TempDir(), events: make(chan Event, 64)}
	r.path = filepath.Join(r.dir, "rules.json")
	if initial != "" {
		r.write(r.path, initial)
	}
	r.eng = flow.NewEngine(flow.WithClock(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	return r.start(opts...)
}

func (r *watchRig) start(opts ...WatchOption) *watchRig {
	r.t.Helper()
	opts = append([]WatchOption{WithDebounce(20 * time.Millisecond),
		WithOnReload(func(e Event) { r.events <- e })}, opts...)
	w, err := Watch(context.Background(), r.path, r.eng, opts...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.w = w
	r.t.Cleanup(func() { w.Close() })
	<-r.events // the first load
	return r
}

func (r *watchRig) write(path, content string) {
	r.t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// saveByRename saves as editors do: a new file renamed over the old one.
func (r *watchRig) saveByRename(content string) {
	r.t.Helper()
	tmp := filepath.Join(r.dir, ".rules.json.swp")
	r.write(tmp, content)
	if err := os.Rename(tmp, r.path); err != nil {
		r.t.Fatal(err)
	}
}

// waitLoaded waits until the watcher reports doc in force.
func (r *watchRig) waitLoaded(doc string) Event {
	r.t.Helper()
	want := versionOf(r.t, doc)
	return r.waitFor("load of "+want[:12], func(e Event) bool { return e.Err == nil && e.Version == want })
}

// waitFailed waits until the watcher reports a refused file.
func (r *watchRig) waitFailed() Event {
	r.t.Helper()
	return r.waitFor("a refused file", func(e Event) bool { return e.Err != nil })
}

func (r *watchRig) waitFor(what string, ok func(Event) bool) Event {
	r.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-r.events:
			if ok(e) {
				return e
			}
		case <-timeout:
			r.t.Fatalf("timed out waiting for %s; status %+v", what, r.w.Status())
		}
	}
}

func (r *watchRig) wantLimit(want int) {
	r.t.Helper()
	if got := limitInForce(r.t, r.eng); got != want {
		r.t.Errorf("a fresh user got %d calls through, want %d (the limit in force)", got, want)
	}
}

func TestWatchAtomicRenameSave(t *testing.T) {
	r := newRig(t, limitDoc(3))
	r.wantLimit(3)
	r.saveByRename(limitDoc(5))
	if e := r.waitLoaded(limitDoc(5)); !e.Changed {
		t.Error("Event.Changed = false for a new limit")
	}
	r.wantLimit(5)
	if d := r.w.Document(); d == nil || d.Rules()[0].Limit != 5 {
		t.Errorf("Document() = %v, want the document with limit 5", d)
	}
	st := r.w.Status()
	if st.Reloads != 2 || st.Failures != 0 || !st.OK || st.Version != versionOf(t, limitDoc(5)) {
		t.Errorf("status = %+v", st)
	}
}

func TestWatchInPlaceWrite(t *testing.T) {
	r := newRig(t, limitDoc(3))
	// Overwrite the bytes without truncating: same length, new limit.
	f, err := os.OpenFile(r.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(limitDoc(7)), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r.waitLoaded(limitDoc(7))
	r.wantLimit(7)
}

func TestWatchTruncateThenWrite(t *testing.T) {
	r := newRig(t, limitDoc(3))
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The watcher may read the empty or half-written file between these
	// writes: it must refuse it and keep the limit of 3 meanwhile.
	doc := limitDoc(4)
	half := len(doc) / 2
	if _, err := f.WriteString(doc[:half]); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	r.wantLimit(3)
	if _, err := f.WriteString(doc[half:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r.waitLoaded(doc)
	r.wantLimit(4)
}

func TestWatchDeleteThenRecreate(t *testing.T) {
	r := newRig(t, limitDoc(3))
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	e := r.waitFailed()
	if !errors.Is(e.Err, os.ErrNotExist) {
		t.Errorf("error for a deleted file = %v, want one that is os.ErrNotExist", e.Err)
	}
	r.wantLimit(3) // a missing file does not remove protection
	r.write(r.path, limitDoc(6))
	r.waitLoaded(limitDoc(6))
	r.wantLimit(6)
}

// TestWatchSymlinkSwap does what the kubelet does for a ConfigMap volume:
// the file is a link through "..data", a link to a timestamped directory,
// and an update renames a new "..data" link over the old one.
func TestWatchSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, content string) {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "rules.json"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("..2026_01_01_00_00_00.1", limitDoc(3))
	must(t, os.Symlink("..2026_01_01_00_00_00.1", filepath.Join(dir, "..data")))
	must(t, os.Symlink("..data/rules.json", filepath.Join(dir, "rules.json")))

	r := &watchRig{t: t, dir: dir, path: filepath.Join(dir, "rules.json"), events: make(chan Event, 64),
		eng: flow.NewEngine(flow.WithClock(clock.NewFake(time.Unix(0, 0))))}
	r.start()
	r.wantLimit(3)

	mk("..2026_01_01_00_05_00.2", limitDoc(8))
	must(t, os.Symlink("..2026_01_01_00_05_00.2", filepath.Join(dir, "..data_tmp")))
	must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	must(t, os.RemoveAll(filepath.Join(dir, "..2026_01_01_00_00_00.1")))
	r.waitLoaded(limitDoc(8))
	r.wantLimit(8)
}

// TestWatchSymlinkTarget edits the file a symlink points to, in another
// directory, with polling off: the watcher must watch that directory too.
func TestWatchSymlinkTarget(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	real := filepath.Join(other, "real.json")
	must(t, os.WriteFile(real, []byte(limitDoc(3)), 0o644))
	must(t, os.Symlink(real, filepath.Join(dir, "rules.json")))
	r := &watchRig{t: t, dir: dir, path: filepath.Join(dir, "rules.json"), events: make(chan Event, 64),
		eng: flow.NewEngine(flow.WithClock(clock.NewFake(time.Unix(0, 0))))}
	r.start(WithPollInterval(0))
	r.wantLimit(3)

	tmp := filepath.Join(other, "real.json.new")
	must(t, os.WriteFile(tmp, []byte(limitDoc(6)), 0o644))
	must(t, os.Rename(tmp, real))
	r.waitLoaded(limitDoc(6))
	r.wantLimit(6)

	// Re-point the link at a file in a third directory, then edit that one.
	third := t.TempDir()
	moved := filepath.Join(third, "moved.json")
	must(t, os.WriteFile(moved, []byte(limitDoc(2)), 0o644))
	link := filepath.Join(dir, ".rules.json.link")
	must(t, os.Symlink(moved, link))
	must(t, os.Rename(link, r.path))
	r.waitLoaded(limitDoc(2))
	r.wantLimit(2)
	must(t, os.WriteFile(moved, []byte(limitDoc(9)), 0o644))
	r.waitLoaded(limitDoc(9))
	r.wantLimit(9)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWatchBadEditKeepsRulesThenGoodEditApplies(t *testing.T) {
	var reported atomic.Value
	r := newRig(t, limitDoc(3), WithOnError(func(err error) { reported.Store(err) }))
	good := r.w.Status()

	bad := strings.Replace(limitDoc(9), `"window": "1h"`, `"window": "1hour"`, 1)
	r.saveByRename(bad)
	e := r.waitFailed()
	for _, want := range []string{r.path, `rules[0] (id "per-user"): window: "1hour": unknown unit "hour"`} {
		if !strings.Contains(e.Err.Error(), want) {
			t.Errorf("error %q lacks %q", e.Err, want)
		}
	}
	r.wantLimit(3) // the old rules stay in force
	st := r.w.Status()
	if st.OK || st.Failures != 1 || st.LastError == nil || st.LastErrorTime.IsZero() ||
		st.Version != good.Version || st.Reloads != 1 || st.LastGoodLoad != good.LastGoodLoad {
		t.Errorf("status after a bad edit = %+v", st)
	}
	if err, _ := reported.Load().(error); err == nil || err.Error() != e.Err.Error() {
		t.Errorf("OnError got %v, want %v", err, e.Err)
	}

	for _, broken := range []string{"", "{\"rules\": [", "   \n"} { // empty, half-written
		r.saveByRename(broken)
		r.waitFailed()
		r.wantLimit(3)
	}

	r.saveByRename(limitDoc(4))
	r.waitLoaded(limitDoc(4))
	r.wantLimit(4)
	st = r.w.Status()
	if !st.OK || st.Failures != 4 || st.Reloads != 2 || st.LastError == nil {
		t.Errorf("status after the good edit = %+v", st)
	}
}

func TestWatchEquivalentSaveKeepsState(t *testing.T) {
	r := newRig(t, limitDoc(3))
	// One user spends their quota; re-saving the same rules, differently
	// laid out, must not give it back.
	for range 3 {
		p, err := r.eng.Entry("api", flow.WithUser("spender"))
		if err != nil {
			t.Fatal(err)
		}
		p.Exit()
	}
	r.saveByRename(strings.ReplaceAll(limitDoc(3), " ", "\n"))
	if e := r.waitLoaded(limitDoc(3)); e.Changed {
		t.Error("Event.Changed = true for equivalent content")
	}
	if _, err := r.eng.Entry("api", flow.WithUser("spender")); !errors.Is(err, flow.ErrBlocked) {
		t.Errorf("after an equivalent save, the spent user was let through: %v", err)
	}
	if st := r.w.Status(); st.Reloads != 1 {
		t.Errorf("Reloads = %d, want 1", st.Reloads)
	}
}

func TestWatchPollingWithoutEvents(t *testing.T) {
	// A debounce of an hour stands in for a file system that sends no
	// events: only the periodic re-read can pick the change up.
	r := newRig(t, limitDoc(3), WithDebounce(time.Hour), WithPollInterval(20*time.Millisecond))
	r.saveByRename(limitDoc(2))
	r.waitLoaded(limitDoc(2))
	r.wantLimit(2)
}

func TestWatchReload(t *testing.T) {
	r := newRig(t, limitDoc(3), WithDebounce(time.Hour), WithPollInterval(0))
	r.write(r.path, limitDoc(5))
	if err := r.w.Reload(); err != nil {
		t.Fatal(err)
	}
	r.wantLimit(5)
	// Someone loads other rules into the engine; Reload puts the file's back.
	other, err := Parse([]byte(limitDoc(1)))
	must(t, err)
	must(t, r.eng.LoadRules(other.Rules()))
	r.wantLimit(1)
	must(t, r.w.Reload())
	r.wantLimit(5)
	r.write(r.path, "{")
	if err := r.w.Reload(); err == nil || !strings.Contains(err.Error(), "line 1, column 2") {
		t.Errorf("Reload of a broken file = %v", err)
	}
	r.wantLimit(5)
}

func TestWatchFirstLoadMustSucceed(t *testing.T) {
	dir := t.TempDir()
	eng := flow.NewEngine()
	if _, err := Watch(context.Background(), filepath.Join(dir, "none.json"), eng); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	p := filepath.Join(dir, "bad.json")
	must(t, os.WriteFile(p, []byte(`{"rules": [{}]}`), 0o644))
	if _, err := Watch(context.Background(), p, eng); err == nil || !strings.Contains(err.Error(), "rules[0]: resource: required") {
		t.Errorf("bad file: %v", err)
	}
}

// settledGoroutines is watcherGoroutines once it reaches want, or after a
// deadline. fsnotify's reader signals Close before its last deferred
// statements run, so its goroutine may outlive Close by a few instructions.
func settledGoroutines(want int) int {
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := watcherGoroutines()
		if n == want || time.Now().After(deadline) {
			return n
		}
		runtime.Gosched()
	}
}

// watcherGoroutines counts goroutines running the watcher's or fsnotify's code.
func watcherGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "rules.(*Watcher)") || strings.Contains(g, "fsnotify") {
			n++
		}
	}
	return n
}

func TestWatchCloseAndCancelLeaveNoGoroutine(t *testing.T) {
	before := watcherGoroutines()
	dir := t.TempDir()
	p := filepath.Join(dir, "rules.json")
	must(t, os.WriteFile(p, []byte(limitDoc(3)), 0o644))

	w, err := Watch(context.Background(), p, flow.NewEngine())
	must(t, err)
	if watcherGoroutines() <= before {
		t.Fatal("no watcher goroutine found while watching")
	}
	w.Close()
	w.Close() // idempotent
	if got := settledGoroutines(before); got != before {
		t.Errorf("after Close: %d watcher goroutines, want %d", got, before)
	}

	ctx, cancel := context.WithCancel(context.Background())
	w, err = Watch(ctx, p, flow.NewEngine())
	must(t, err)
	cancel()
	<-w.done
	w.Close()
	if got := settledGoroutines(before); got != before {
		t.Errorf("after cancel: %d watcher goroutines, want %d", got, before)
	}
	if err := w.Reload(); err == nil {
		t.Error("Reload after Close succeeded")
	}
}
