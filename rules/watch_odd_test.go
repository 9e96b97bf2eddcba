package rules

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// replaceWith puts what make creates at a temporary name in the rig's
// directory, then renames it over the watched path, as an editor saves.
func (r *watchRig) replaceWith(make func(tmp string) error) {
	r.t.Helper()
	tmp := filepath.Join(r.dir, ".rules.json.new")
	if err := make(tmp); err != nil {
		r.t.Skipf("cannot create the file: %v", err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		r.t.Fatal(err)
	}
}

// wantRefused waits for a refused read whose error is want, and checks
// that Status says so and that the last good limit stays in force.
func (r *watchRig) wantRefused(want error, limit int) {
	r.t.Helper()
	e := r.waitFailed()
	if !errors.Is(e.Err, want) {
		r.t.Errorf("refused with %v, want %v", e.Err, want)
	}
	if st := r.w.Status(); st.OK || !errors.Is(st.LastError, want) {
		r.t.Errorf("Status() = OK %v, LastError %v; want not OK, %v", st.OK, st.LastError, want)
	}
	r.wantLimit(limit)
}

// TestWatchRefusesDevZeroAndHugeFiles: the watched path turned into a link
// to /dev/zero, then into a file far over MaxDocumentBytes, is refused
// without reading it (Status says why), and the last good rules stay.
func TestWatchRefusesDevZeroAndHugeFiles(t *testing.T) {
	r := newRig(t, limitDoc(3))
	r.replaceWith(func(tmp string) error { return os.Symlink("/dev/zero", tmp) })
	r.wantRefused(ErrNotRegular, 3)

	r.replaceWith(func(tmp string) error {
		if err := os.WriteFile(tmp, []byte(limitDoc(4)), 0o600); err != nil {
			return err
		}
		return os.Truncate(tmp, 1<<40) // sparse: a terabyte that was never written
	})
	r.wantRefused(ErrTooLarge, 3)

	r.saveByRename(limitDoc(5))
	r.waitLoaded(limitDoc(5))
	r.wantLimit(5)
	if st := r.w.Status(); !st.OK {
		t.Errorf("Status() after a good save = %+v, want OK", st)
	}
}

// TestWatchFIFONeverBlocks: a FIFO put at the watched path is refused at
// once instead of blocking the open; a good file renamed over it later is
// loaded; Close returns and the watcher's goroutine is gone.
func TestWatchFIFONeverBlocks(t *testing.T) {
	before := runtime.NumGoroutine()
	r := newRig(t, limitDoc(3))
	r.replaceWith(func(tmp string) error { return syscall.Mkfifo(tmp, 0o600) })
	r.wantRefused(ErrNotRegular, 3)
	if err := r.w.Reload(); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Reload() = %v, want ErrNotRegular", err)
	}

	r.saveByRename(limitDoc(5))
	r.waitLoaded(limitDoc(5))
	r.wantLimit(5)

	closed := make(chan error, 1)
	go func() { closed <- r.w.Close() }()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close did not return")
	}
	waitGoroutines(t, before)
}

// TestWatchStartsOnAFIFOWithoutBlocking: Watch on a FIFO returns the
// refusal at once and leaves nothing running.
func TestWatchStartsOnAFIFOWithoutBlocking(t *testing.T) {
	before := runtime.NumGoroutine()
	path := filepath.Join(t.TempDir(), "rules.json")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		w, err := Watch(context.Background(), path, flow.NewEngine())
		if err == nil {
			w.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("Watch(FIFO) = %v, want ErrNotRegular", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Watch(FIFO) blocked")
	}
	waitGoroutines(t, before)
}
