package rules

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

func TestWatchDirectoryRecreated(t *testing.T) {
	r := newRig(t, limitDoc(3), WithPollInterval(20*time.Millisecond))
	must(t, os.RemoveAll(r.dir))
	r.waitFailed()
	r.wantLimit(3)
	must(t, os.Mkdir(r.dir, 0o755))
	r.write(r.path, limitDoc(5))
	r.waitLoaded(limitDoc(5))
	r.wantLimit(5)
	// The read that found the file again, a poll's or one debounced from
	// the old directory's events, also watched the directory again.
	if !slices.Contains(r.w.fsw.WatchList(), r.dir) {
		t.Errorf("watch list %v lacks the re-created directory", r.w.fsw.WatchList())
	}
	r.saveByRename(limitDoc(7))
	r.waitLoaded(limitDoc(7))
	r.wantLimit(7)
}

// TestWatchDirectoryRecreatedNoPoll: with polling off, a read that finds
// the file in a re-created directory (here Reload's) must watch it again,
// or no later edit would ever be seen.
func TestWatchDirectoryRecreatedNoPoll(t *testing.T) {
	r := newRig(t, limitDoc(3), WithPollInterval(0))
	must(t, os.RemoveAll(r.dir))
	r.waitFailed()
	must(t, os.Mkdir(r.dir, 0o755))
	r.write(r.path, limitDoc(5))
	must(t, r.w.Reload())
	r.wantLimit(5)
	r.saveByRename(limitDoc(7))
	r.waitLoaded(limitDoc(7))
	r.wantLimit(7)
}

// TestRewatchWhileEventsLag re-creates the watched directory while
// fsnotify's reader is still blocked handing over an earlier event, so its
// watch list still names the dead watch: rewatch must not trust that list.
func TestRewatchWhileEventsLag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rules.json")
	must(t, os.WriteFile(file, []byte("{}"), 0o644))
	fsw, err := fsnotify.NewWatcher()
	must(t, err)
	defer fsw.Close()
	must(t, fsw.Add(dir))
	w := &Watcher{dir: dir, fsw: fsw, cfg: watchConfig{log: slog.New(slog.DiscardHandler)}}

	// Nobody reads fsw.Events yet: the reader blocks on the file's Remove,
	// before it sees that the directory itself is gone.
	must(t, os.Remove(file))
	must(t, os.Remove(dir))
	must(t, os.Mkdir(dir, 0o755))
	w.rewatch()
	must(t, os.WriteFile(file, []byte("{}"), 0o644))

	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-fsw.Events:
			if ev.Name == file && ev.Has(fsnotify.Create) {
				if !slices.Contains(fsw.WatchList(), dir) {
					t.Errorf("watch list %v lacks the re-created directory", fsw.WatchList())
				}
				return
			}
		case err := <-fsw.Errors:
			t.Fatalf("watch error: %v", err)
		case <-timeout:
			t.Fatalf("no event for a file created in the re-created directory; watch list %v", fsw.WatchList())
		}
	}
}
