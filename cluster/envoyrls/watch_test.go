package envoyrls

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reloads collects a Watcher's reload results.
type reloads chan error

func (r reloads) next(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r:
		return err
	case <-time.After(10 * time.Second): // a bound on fsnotify's delivery, not a wait for logic
		t.Fatal("no reload within 10s of the change")
		return nil
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWatchDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), "domain: a\ndescriptors: [{key: k, rate_limit: {unit: second, requests_per_unit: 1}}]")
	write(t, filepath.Join(dir, "notes.txt"), "not a config")
	svc := NewService()
	got := make(reloads, 16)
	w, err := Watch(svc, dir, OnReload(func(err error) { got <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := got.next(t); err != nil {
		t.Fatalf("first load: %v", err)
	}
	write(t, filepath.Join(dir, "b.yml"), "domain: b")
	if err := got.next(t); err != nil {
		t.Fatalf("adding b.yml: %v", err)
	}
	if d := svc.Config().Domains(); strings.Join(d, ",") != "a,b" {
		t.Fatalf("domains %v, want a,b", d)
	}
	bad := filepath.Join(dir, "c.yaml")
	write(t, bad, "domain: a") // a second file for domain a
	err = got.next(t)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "defined twice") {
		t.Fatalf("duplicate domain: got %v, want it refused naming %s", err, bad)
	}
	if d := svc.Config().Domains(); strings.Join(d, ",") != "a,b" {
		t.Errorf("after a refusal: domains %v, want the last good a,b", d)
	}
	if err := os.Remove(bad); err != nil {
		t.Fatal(err)
	}
	if err := got.next(t); err != nil {
		t.Fatalf("after removing the bad file: %v", err)
	}
}

func TestWatchFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rls.yaml")
	write(t, path, "domain: one")
	svc := NewService()
	got := make(reloads, 16)
	w, err := Watch(svc, path, OnReload(func(err error) { got <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got.next(t)
	write(t, path, "domain: [")
	if err := got.next(t); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Fatalf("bad YAML: got %v, want it refused with its path", err)
	}
	if d := svc.Config().Domains(); len(d) != 1 || d[0] != "one" {
		t.Errorf("domains %v, want the last good [one]", d)
	}
	// Replaced by rename, as deploy tools and ConfigMaps do.
	tmp := path + ".tmp"
	write(t, tmp, "domain: two")
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	for err := got.next(t); err != nil || svc.Config().Domains()[0] != "two"; err = got.next(t) {
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWatchRefusesABadStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rls.yaml")
	write(t, path, "domain: d\ndescriptors: [{key: k, rate_limit: {unit: fortnight}}]")
	if _, err := Watch(NewService(), path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v, want the bad file refused with its path", err)
	}
	if _, err := Watch(NewService(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "no *.yaml") {
		t.Fatalf("empty directory: got %v", err)
	}
}
