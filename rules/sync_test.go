package rules

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// chanSource is a Source a test feeds by hand: each Read sent on in is
// delivered, and done is signalled once the Syncer has taken it, so the
// test never waits on timing.
type chanSource struct {
	name string
	in   chan Read
	done chan struct{}
}

func newChanSource(name string) *chanSource {
	return &chanSource{name: name, in: make(chan Read), done: make(chan struct{})}
}

func (c *chanSource) Name() string { return c.name }

func (c *chanSource) Run(ctx context.Context, deliver func(Read)) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r := <-c.in:
			deliver(r)
			c.done <- struct{}{}
		}
	}
}

// send delivers r and waits until the Syncer has handled it.
func (c *chanSource) send(t *testing.T, r Read) {
	t.Helper()
	select {
	case c.in <- r:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Run is not reading", c.name)
	}
	<-c.done
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSyncPrecedence: a store that is down at start-up leaves the file in
// force; once the store answers it takes over; a bad document or an outage
// of the store keeps its rules; the file's later changes wait in standby.
func TestSyncPrecedence(t *testing.T) {
	store := newChanSource("store")
	path := writeFile(t, limitDoc(3))
	eng := flow.NewEngine()

	started := make(chan *Syncer, 1)
	errc := make(chan error, 1)
	go func() {
		s, err := Sync(context.Background(), eng, []Source{store, FileSource(path, WithPollInterval(0))})
		errc <- err
		started <- s
	}()
	// Sync waits for the store's first answer before settling on the file.
	store.send(t, Read{Err: errors.New("store unreachable")})
	if err := <-errc; err != nil {
		t.Fatalf("Sync: %v", err)
	}
	s := <-started
	defer s.Close()
	if got := limitInForce(t, eng); got != 3 {
		t.Fatalf("limit with the store down = %d, want the file's 3", got)
	}
	if st := s.Status(); !strings.HasPrefix(st.Source, "file ") {
		t.Errorf("Status.Source = %q, want the file", st.Source)
	}

	store.send(t, Read{Data: []byte(limitDoc(5)), Revision: "7"})
	if got := limitInForce(t, eng); got != 5 {
		t.Fatalf("limit once the store answers = %d, want its 5", got)
	}
	srcs := s.Sources()
	if !srcs[0].InForce || srcs[1].InForce || srcs[0].Revision != "7" {
		t.Errorf("Sources = %+v, want the store in force at revision 7", srcs)
	}

	failures := s.Status().Failures // the store's first outage may count, if it came first
	store.send(t, Read{Data: []byte(`{"rules": [{"id": "x"}]}`), Revision: "8"})
	store.send(t, Read{Err: errors.New("store unreachable")})
	if got := limitInForce(t, eng); got != 5 {
		t.Fatalf("limit after a bad document and an outage = %d, want the last good 5", got)
	}
	st := s.Status()
	if st.OK || st.Source != "store" || st.LastError == nil || !strings.Contains(st.LastError.Error(), "unreachable") {
		t.Errorf("Status = %+v, want not OK, source store, the outage as LastError", st)
	}
	if st.Failures != failures+2 {
		t.Errorf("Failures = %d, want %d", st.Failures, failures+2)
	}
	if err := s.Sources()[0].LastError; err == nil {
		t.Error("the store's LastError is nil, want the outage")
	}
}

// TestSyncNothingGood: when no source gives a good document, Sync fails
// with every reason and leaves no goroutine behind.
func TestSyncNothingGood(t *testing.T) {
	before := runtime.NumGoroutine()
	store := newChanSource("store")
	path := writeFile(t, `{"rules": [{"id": "x"}]}`)
	errc := make(chan error, 1)
	go func() {
		_, err := Sync(context.Background(), flow.NewEngine(), []Source{store, FileSource(path, WithPollInterval(0))})
		errc <- err
	}()
	store.send(t, Read{Err: errors.New("store unreachable")})
	err := <-errc
	if err == nil {
		t.Fatal("Sync succeeded; want an error")
	}
	for _, want := range []string{"store unreachable", `rules[0] (id "x"): resource: required`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	waitGoroutines(t, before)
}

// TestSyncStartTimeout: a source that never answers does not hold start-up
// past WithStartTimeout when a later one has a good document.
func TestSyncStartTimeout(t *testing.T) {
	silent := newChanSource("silent")
	path := writeFile(t, limitDoc(4))
	eng := flow.NewEngine()
	s, err := Sync(context.Background(), eng, []Source{silent, FileSource(path, WithPollInterval(0))},
		WithStartTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := limitInForce(t, eng); got != 4 {
		t.Fatalf("limit = %d, want the file's 4", got)
	}
}

// TestSyncLoaderFunc: a LoaderFunc receives the rules, validated once by
// Parse; no engine is needed.
func TestSyncLoaderFunc(t *testing.T) {
	var got []flow.Rule
	w, err := Watch(context.Background(), writeFile(t, limitDoc(2)), LoaderFunc(func(rs []flow.Rule) error {
		got = rs
		return nil
	}), WithPollInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(got) != 1 || got[0].ID != "per-user" || got[0].Limit != 2 {
		t.Fatalf("loader got %+v, want the one rule per-user with limit 2", got)
	}
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d, want <= %d\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond) // waiting for goroutines to exit, not for logic
	}
}

// TestSyncStandbyWaits: a lower-precedence source's changes are read and
// kept, but not applied while a higher one is in force.
func TestSyncStandbyWaits(t *testing.T) {
	primary, standby := newChanSource("primary"), newChanSource("standby")
	eng := flow.NewEngine()
	started := make(chan *Syncer, 1)
	go func() {
		s, err := Sync(context.Background(), eng, []Source{primary, standby})
		if err != nil {
			t.Error(err)
		}
		started <- s
	}()
	standby.send(t, Read{Data: []byte(limitDoc(2))})
	primary.send(t, Read{Data: []byte(limitDoc(5))})
	s := <-started
	if s == nil {
		t.FailNow()
	}
	defer s.Close()
	standby.send(t, Read{Data: []byte(limitDoc(9))})
	if got := limitInForce(t, eng); got != 5 {
		t.Fatalf("limit = %d, want the primary's 5 while the standby changed", got)
	}
	srcs := s.Sources()
	if !srcs[0].InForce || srcs[1].InForce || srcs[1].Version != versionOf(t, limitDoc(9)) {
		t.Errorf("Sources = %+v, want the primary in force and the standby at its new version", srcs)
	}
}
