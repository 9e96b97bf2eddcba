package envoyrls

import (
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher keeps a Service's Config in step with a file or a directory of
// files. A change that does not load (a bad file, a duplicate domain, an
// emptied directory) is refused with the problem and its path, and the
// last good Config stays in force.
type Watcher struct {
	svc      *Service
	path     string
	fsw      *fsnotify.Watcher
	onReload func(error)
	log      *slog.Logger
	mu       sync.Mutex // serialises reloads
	done     chan struct{}
	closed   chan struct{}
	once     sync.Once
}

// WatchOption configures a Watcher.
type WatchOption func(*Watcher)

// OnReload is called after each reload with its error (nil: the new
// Config is in force), for tests and logs.
func OnReload(f func(error)) WatchOption { return func(w *Watcher) { w.onReload = f } }

// WatchLogger logs each reload and refusal to l; default silent.
func WatchLogger(l *slog.Logger) WatchOption { return func(w *Watcher) { w.log = l } }

// settle is how long a change must be quiet before it is read: editors and
// deploy tools write a file in several steps (truncate, write, rename).
const settle = 100 * time.Millisecond

// Watch loads path into svc and then reloads it on every change. The first
// load must succeed. Close stops the watching goroutine.
func Watch(svc *Service, path string, opts ...WatchOption) (*Watcher, error) {
	w := &Watcher{svc: svc, path: path, done: make(chan struct{}), closed: make(chan struct{})}
	for _, o := range opts {
		o(w)
	}
	if err := w.Reload(); err != nil {
		return nil, err
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	dir := path
	if names, _ := configFiles(path); len(names) == 1 && names[0] == path {
		dir = filepath.Dir(path) // a file: watch its directory, where renames land
	}
	if err := fsw.Add(dir); err != nil {
		fsw.Close()
		return nil, err
	}
	w.fsw = fsw
	go w.run()
	return w, nil
}

// Reload reads the path now and, when it loads, puts it in force.
func (w *Watcher) Reload() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, err := LoadPath(w.path)
	if err == nil {
		err = w.svc.Load(c)
	}
	if w.log != nil {
		if err != nil {
			w.log.Error("envoyrls: configuration refused, the last good one stays", slog.String("path", w.path), slog.String("err", err.Error()))
		} else {
			w.log.Info("envoyrls: configuration loaded", slog.String("path", w.path), slog.Any("domains", c.Domains()))
		}
	}
	if w.onReload != nil {
		w.onReload(err)
	}
	return err
}

// run reloads once a burst of events has settled.
func (w *Watcher) run() {
	defer close(w.closed)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if w.concerns(ev.Name) {
				timer.Reset(settle)
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			if w.log != nil {
				w.log.Warn("envoyrls: watching", slog.String("path", w.path), slog.String("err", err.Error()))
			}
		case <-timer.C:
			w.Reload() // refusals are logged and reported by Reload
		}
	}
}

// concerns reports whether a change to name may change the Config.
func (w *Watcher) concerns(name string) bool {
	if filepath.Clean(name) == filepath.Clean(w.path) {
		return true
	}
	base := filepath.Base(name)
	return filepath.Dir(name) == filepath.Clean(w.path) && isYAMLName(base) && base[0] != '.'
}

// Close stops watching; the Service keeps the Config in force. It is
// idempotent and returns once the watching goroutine has ended.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		err = w.fsw.Close()
		<-w.closed
	})
	return errors.Join(err)
}
