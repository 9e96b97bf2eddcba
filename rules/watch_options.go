package rules

import (
	"log/slog"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// Event reports one attempt of a Watcher to load its file, or of a Syncer
// to load what one of its sources read. It is the hook for metrics: count
// Err and Changed per Source.
type Event struct {
	// Time is when the attempt finished (the watcher's clock).
	Time time.Time
	// Err is why the file was not applied; nil on success. The rules in
	// force are then still the last good ones.
	Err error
	// Doc is the document now in force, on success.
	Doc *Document
	// Version is the Version of the document in force (after the attempt).
	Version string
	// Changed reports that the attempt replaced the engine's rules; a file
	// saved with equivalent content succeeds without touching the engine.
	Changed bool
	// Source names where the document was read (a file's path, or a
	// Source's Name).
	Source string
}

// WatchOption configures Watch and Sync (and FileSource, which uses the
// debounce and poll settings).
type WatchOption func(*watchConfig)

type watchConfig struct {
	debounce time.Duration
	poll     time.Duration
	log      *slog.Logger
	clk      clock.Clock
	onReload func(Event)
	onError  func(error)
	startup  time.Duration // Sync only
}

func newWatchConfig(opts []WatchOption) watchConfig {
	cfg := watchConfig{debounce: DefaultDebounce, poll: DefaultPollInterval, clk: clock.Real(), startup: DefaultStartTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.log == nil {
		cfg.log = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// Defaults of the watch options.
const (
	DefaultDebounce     = 100 * time.Millisecond
	DefaultPollInterval = 10 * time.Second
	DefaultStartTimeout = 10 * time.Second
)

// WithDebounce sets how long the watcher waits after the last file-system
// event of a burst before reading the file (an editor's save is often a
// create, several writes and a rename). Default 100ms.
func WithDebounce(d time.Duration) WatchOption {
	return func(c *watchConfig) { c.debounce = max(d, 0) }
}

// WithPollInterval sets how often the file is re-read even without events,
// for file systems that send none (some network and FUSE mounts). A read
// whose bytes did not change costs a hash and nothing else. Default 10s;
// 0 turns polling off.
func WithPollInterval(d time.Duration) WatchOption {
	return func(c *watchConfig) { c.poll = max(d, 0) }
}

// WithLogger makes the watcher log each reload (Info) and each refused file
// (Warn). Default: silent.
func WithLogger(l *slog.Logger) WatchOption {
	return func(c *watchConfig) { c.log = l }
}

// WithClock sets the clock for the times in Status and Event. Debouncing
// and polling use real timers: file-system events are real.
func WithClock(clk clock.Clock) WatchOption {
	return func(c *watchConfig) { c.clk = clk }
}

// WithOnReload calls fn after every load attempt, good or bad, including
// the first one, which runs in Watch itself. Later calls run on the
// watcher's goroutine: fn should be quick, and must not call Close.
func WithOnReload(fn func(Event)) WatchOption {
	return func(c *watchConfig) { c.onReload = fn }
}

// WithOnError calls fn with the reason whenever a changed file is refused
// (bad, empty, half-written or missing); the last good rules stay in force.
// Same constraints as WithOnReload.
func WithOnError(fn func(error)) WatchOption {
	return func(c *watchConfig) { c.onError = fn }
}

// WithStartTimeout bounds how long Sync waits at start-up for a source with
// precedence over the best one read so far to answer (an etcd that does not
// answer, say). Default 10s.
func WithStartTimeout(d time.Duration) WatchOption {
	return func(c *watchConfig) { c.startup = max(d, 0) }
}
