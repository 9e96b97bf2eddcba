package rules

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/flowgate/flowgate/flow"
)

// Loader is what a Watcher or a Syncer applies a good document's rules to.
// *flow.Engine is one; LoaderFunc turns a func into one, for a program that
// serves the rules rather than enforcing them (cmd/flowgate serve).
type Loader interface {
	LoadRules(rules []flow.Rule) error
}

// LoaderFunc adapts a func to Loader.
type LoaderFunc func(rules []flow.Rule) error

// LoadRules calls f(rules).
func (f LoaderFunc) LoadRules(rules []flow.Rule) error { return f(rules) }

var _ Loader = (*flow.Engine)(nil)

// keeper owns the rules in force for one Loader: it applies a parsed,
// validated document, keeps the last good one when a read is refused, and
// reports both (Status, callbacks, slog). The Watcher and the Syncer share
// it, so every source gets the same guarantees.
type keeper struct {
	target Loader
	cfg    watchConfig

	mu  sync.Mutex
	st  Status
	doc *Document // in force
}

// parse turns what a source read into a document, naming the source in a
// parse error (a read error names it already: a path, an etcd key).
// Validation is Parse's: a document that parses is one the engine accepts.
func parse(source string, data []byte, readErr error) (*Document, error) {
	if readErr != nil {
		return nil, fmt.Errorf("rules: %w", readErr)
	}
	doc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("rules: %s: %w", source, err)
	}
	return doc, nil
}

// apply loads doc into the target when its version differs from the one in
// force, or always when force (the document is then re-asserted, in case
// the target's rules were changed by other means; LoadRules keeps the state
// of unchanged rules anyway). It returns why the target refused it.
func (k *keeper) apply(source string, doc *Document, force bool) error {
	version := doc.Version()
	k.mu.Lock()
	changed := force || version != k.st.Version
	k.mu.Unlock()
	if changed {
		if err := k.target.LoadRules(doc.Rules()); err != nil {
			return k.fail(source, fmt.Errorf("rules: %s: engine refused the rules: %w", source, err))
		}
	}
	now := k.cfg.clk.Now()
	k.mu.Lock()
	k.st.Version, k.st.LastGoodLoad, k.st.OK, k.st.Source = version, now, true, source
	if changed {
		k.st.Reloads++
		k.doc = doc
	}
	k.mu.Unlock()
	if changed {
		k.cfg.log.Info("rules: loaded", slog.String("source", source), slog.Int("rules", len(doc.rules)),
			slog.String("version", version[:12]))
	}
	if k.cfg.onReload != nil {
		k.cfg.onReload(Event{Time: now, Doc: doc, Version: version, Changed: changed, Source: source})
	}
	return nil
}

// fail records a refused read; the rules in force do not change.
func (k *keeper) fail(source string, err error) error {
	now := k.cfg.clk.Now()
	k.mu.Lock()
	k.st.LastError, k.st.LastErrorTime, k.st.OK = err, now, false
	k.st.Failures++
	version := k.st.Version
	k.mu.Unlock()
	k.cfg.log.Warn("rules: read refused, keeping the rules in force", slog.String("source", source),
		slog.Any("error", err))
	if k.cfg.onError != nil {
		k.cfg.onError(err)
	}
	if k.cfg.onReload != nil {
		k.cfg.onReload(Event{Time: now, Err: err, Version: version, Source: source})
	}
	return err
}

func (k *keeper) status() Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.st
}

func (k *keeper) document() *Document {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.doc
}
