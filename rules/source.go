package rules

import (
	"context"
	"path/filepath"
)

// Source delivers rules documents over time: a file (FileSource), a key in
// etcd (package rules/etcdsource), anything else a program writes. A source
// only reads; a Syncer parses, validates and applies what it reads, so every
// source gets the same guarantees: nothing unvalidated is applied, and a bad
// document or an outage leaves the last good rules in force.
type Source interface {
	// Name says where the source reads, for Status, events and logs:
	// "file /etc/rules.json", "etcd /flowgate/rules".
	Name() string
	// Run reads the current document and hands it to deliver, then hands
	// over every change, until ctx ends. A failed read (a missing file, an
	// unreachable store) is handed over as a Read with Err set, and Run
	// keeps trying by itself. Run returns ctx.Err() when ctx ends, or an
	// error that stops the source for good. Calls to deliver come from
	// Run's goroutine, one at a time.
	Run(ctx context.Context, deliver func(Read)) error
}

// Read is one reading of a source: a whole document, or why there is none.
// A source never hands over part of a document.
type Read struct {
	// Data is the document as read.
	Data []byte
	// Err is why there is no document now; it names the source (a path,
	// an etcd key).
	Err error
	// Revision is the source's own label for this read (an etcd revision);
	// empty when it has none.
	Revision string
}

// FileSource is the file watcher of Watch as a Source: it reads the file at
// path, then again on every change, with the same handling of editors'
// renames, ConfigMap symlink swaps and deleted directories. Of opts it uses
// WithDebounce and WithPollInterval; the Syncer's options do the rest.
func FileSource(path string, opts ...WatchOption) Source {
	return &fileSource{path: path, cfg: newWatchConfig(opts)}
}

type fileSource struct {
	path string
	cfg  watchConfig
}

func (f *fileSource) Name() string {
	if abs, err := filepath.Abs(f.path); err == nil {
		return "file " + abs
	}
	return "file " + f.path
}

func (f *fileSource) Run(ctx context.Context, deliver func(Read)) error {
	w, err := newWatcher(f.path, f.cfg)
	if err != nil {
		return err
	}
	w.deliver = func(data []byte, readErr error, _ bool) error {
		deliver(Read{Data: data, Err: readErr})
		return nil
	}
	_ = w.check(true)
	w.loop(ctx)
	return ctx.Err()
}
