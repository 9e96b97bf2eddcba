package rules

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Status is what a Watcher or a Syncer knows about its sources and the
// rules in force.
type Status struct {
	// Path is the watched file (a Watcher's; empty for a Syncer).
	Path string
	// Source names the source of the document in force (a file's path, or
	// a Source's Name).
	Source string
	// Version is the Version of the document in force.
	Version string
	// LastGoodLoad is when a document was last read and accepted.
	LastGoodLoad time.Time
	// LastError is why the last refused read was refused (a bad document,
	// a missing file, an unreachable store); it is kept after a later good
	// load, for the record.
	LastError error
	// LastErrorTime is when LastError happened; zero if never.
	LastErrorTime time.Time
	// OK says whether the most recent attempt succeeded.
	OK bool
	// Reloads counts loads that changed the engine's rules (the first
	// included); Failures counts refused reads.
	Reloads, Failures uint64
}

// Watcher keeps an engine's rules in step with a rules file; see Watch.
// Its methods are safe for concurrent use.
type Watcher struct {
	path, dir, base string
	cfg             watchConfig
	// deliver takes what a read found: Watch's applies it through a
	// keeper, a FileSource's hands it to its Syncer.
	deliver func(data []byte, readErr error, force bool) error
	keeper  *keeper // Watch's; nil for a FileSource
	fsw     *fsnotify.Watcher
	// target is the file path resolves to through symlinks, when its
	// directory is not dir: that directory is watched too, so editing the
	// link's target is seen. Only the watcher's goroutine uses it.
	target string

	mu       sync.Mutex
	lastSeen [sha256.Size]byte // hash of the last bytes (or read error) tried

	reload    chan chan error
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// Watch loads the rules document at path into eng, then keeps eng in step
// with the file until ctx ends or Close is called. eng is usually a
// *flow.Engine; LoaderFunc takes the rules anywhere else.
//
// It watches the file's directory, not the file: editors save by writing a
// new file and renaming it over the old one, and Kubernetes ConfigMap
// volumes swap a "..data" symlink; both replace the inode a file watch
// would follow. Bursts of events are debounced, then the whole file is read,
// parsed and validated, and applied with one eng.LoadRules. A bad, empty,
// half-written or missing file never takes protection away: the last good
// rules stay in force, and the reason is logged, passed to the callbacks
// and kept in Status. The file is also re-read periodically, for file
// systems without events.
//
// If the first load fails, Watch returns its error and watches nothing.
// Sync does the same for a file among other sources (FileSource).
func Watch(ctx context.Context, path string, eng Loader, opts ...WatchOption) (*Watcher, error) {
	cfg := newWatchConfig(opts)
	w, err := newWatcher(path, cfg)
	if err != nil {
		return nil, err
	}
	w.keeper = &keeper{target: eng, cfg: cfg}
	w.keeper.st.Path = w.path
	w.deliver = func(data []byte, readErr error, force bool) error {
		doc, err := parse(w.path, data, readErr)
		if err != nil {
			return w.keeper.fail(w.path, err)
		}
		return w.keeper.apply(w.path, doc, force)
	}
	if err := w.check(true); err != nil {
		w.fsw.Close()
		return nil, err
	}
	go w.loop(ctx)
	return w, nil
}

// newWatcher sets up the directory watch for path; the caller reads the
// file first, then runs loop.
func newWatcher(path string, cfg watchConfig) (*Watcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	w := &Watcher{
		path: abs, dir: filepath.Dir(abs), base: filepath.Base(abs), cfg: cfg,
		reload: make(chan chan error), stop: make(chan struct{}), done: make(chan struct{}),
	}
	// Watch before the first read, so no change after it goes unseen.
	if w.fsw, err = fsnotify.NewWatcher(); err != nil {
		return nil, err
	}
	if err := w.fsw.Add(w.dir); err != nil {
		w.fsw.Close()
		return nil, fmt.Errorf("rules: watch %s: %w", w.dir, err)
	}
	return w, nil
}

// Status returns the watcher's state now.
func (w *Watcher) Status() Status { return w.keeper.status() }

// Document returns the document in force, for its Adaptive and Alerting
// sections; WithOnReload reports each new one.
func (w *Watcher) Document() *Document { return w.keeper.document() }

// Reload reads the file now and loads it into the engine even if it has
// not changed, and returns why it was refused (nil when it was applied).
// Useful on SIGHUP. After Close it returns an error and loads nothing.
func (w *Watcher) Reload() error {
	reply := make(chan error, 1)
	select {
	case w.reload <- reply:
		return <-reply
	case <-w.done:
		return errors.New("rules: watcher closed")
	}
}

// Close stops watching and waits for the watcher's goroutine to end. The
// rules in force stay. Close is idempotent.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() { close(w.stop) })
	<-w.done
	return nil
}

// maxDebounceDelay bounds how long a steady stream of events can hold off a
// reload, as a multiple of the debounce time.
const maxDebounceDelay = 10

func (w *Watcher) loop(ctx context.Context) {
	defer close(w.done)
	defer w.fsw.Close()

	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	var pending bool
	var burstStart time.Time

	var pollC <-chan time.Time
	if w.cfg.poll > 0 {
		t := time.NewTicker(w.cfg.poll)
		defer t.Stop()
		pollC = t.C
	}
	for {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if !w.relevant(ev) {
				continue
			}
			// Wait for the burst to settle, but not forever.
			now := time.Now()
			if !pending {
				pending, burstStart = true, now
			}
			wait := w.cfg.debounce
			if limit := burstStart.Add(maxDebounceDelay * w.cfg.debounce); now.Add(wait).After(limit) {
				wait = max(0, limit.Sub(now))
			}
			debounce.Reset(wait)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.cfg.log.Warn("rules: file watch error", slog.String("path", w.path), slog.Any("error", err))
		case <-debounce.C:
			pending = false
			w.check(false)
		case <-pollC:
			w.check(false)
		case reply := <-w.reload:
			reply <- w.check(true)
		}
	}
}

// relevant reports whether ev may have changed the file: an event on its
// name, or on a Kubernetes-style "..data" link or "..2024_..." directory.
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	name := filepath.Base(ev.Name)
	return name == w.base || strings.HasPrefix(name, "..") || (w.target != "" && ev.Name == w.target)
}

// followLink watches the directory of the file the path's symlinks lead to,
// when that is another directory, and stops watching the previous one.
func (w *Watcher) followLink() {
	real, err := filepath.EvalSymlinks(w.path)
	if err != nil || filepath.Dir(real) == w.dir {
		real = ""
	}
	if real == w.target {
		return
	}
	if w.target != "" {
		_ = w.fsw.Remove(filepath.Dir(w.target)) // may be gone already
	}
	w.target = ""
	if real != "" && w.fsw.Add(filepath.Dir(real)) == nil {
		w.target = real
	}
}

// rewatch adds the directory watch again in case it was lost (the
// directory was removed and re-created), and reports whether the directory
// is watched now.
//
// It adds unconditionally rather than consulting fsw.WatchList: fsnotify
// drops a dead watch from that list only when its reader goroutine handles
// the directory's IN_DELETE_SELF, and the reader waits for this goroutine
// to take each earlier event, so the list can still name a watch the kernel
// has already removed. inotify_add_watch on a live watch returns the same
// descriptor and changes nothing; on a re-created directory it makes a new
// one, and fsnotify then ignores the late events of the old one.
func (w *Watcher) rewatch() bool {
	known := slices.Contains(w.fsw.WatchList(), w.dir) // only for the log line
	err := w.fsw.Add(w.dir)
	if err == nil && !known {
		w.cfg.log.Info("rules: watching directory again", slog.String("dir", w.dir))
	}
	if w.target != "" {
		_ = w.fsw.Add(filepath.Dir(w.target)) // same reason; may be gone
	}
	return err == nil
}

// check reads the file and delivers it if it changed since the last
// attempt (or always, when force). It returns why the file was refused.
func (w *Watcher) check(force bool) error {
	// Every read, not only the poll's, re-arms the directory watch first, so
	// no change after the read goes unseen: a debounced read may be the one
	// that finds the file in a re-created directory. If the directory was
	// missing then but the read found the file, it is back: watch it now.
	watched := w.rewatch()
	w.followLink() // before reading, so an edit of a new link target is seen
	data, readErr := ReadFile(w.path)
	if !watched && readErr == nil {
		w.rewatch()
	}
	var sum [sha256.Size]byte
	if readErr != nil {
		sum = sha256.Sum256([]byte("\x00read error: " + readErr.Error()))
	} else {
		sum = sha256.Sum256(data)
	}
	w.mu.Lock()
	same := sum == w.lastSeen
	w.lastSeen = sum
	w.mu.Unlock()
	if same && !force {
		return nil
	}
	return w.deliver(data, readErr, force)
}
