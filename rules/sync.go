package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Syncer keeps a Loader's rules in step with several sources, listed in
// order of precedence; see Sync. Its methods are safe for concurrent use.
type Syncer struct {
	k       *keeper
	sources []Source
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	settled chan struct{} // closed once start-up has its answer

	mu     sync.Mutex // orders deliveries from all sources
	state  []SourceStatus
	docs   []*Document // each source's last good document
	active int         // index of the source in force; -1 before the first
	done   bool        // settled is closed
}

// SourceStatus is what a Syncer knows about one of its sources.
type SourceStatus struct {
	// Name is the Source's Name.
	Name string
	// InForce reports that the rules in force came from this source.
	InForce bool
	// OK says whether its latest read gave a good document.
	OK bool
	// Version is the Version of its last good document; "" if none yet.
	Version string
	// Revision is the Revision of its latest read.
	Revision string
	// LastError is why its latest refused read was refused.
	LastError error
	// Reads counts what it delivered, good or bad.
	Reads uint64
}

// Sync applies rules from sources to target and keeps them in step until ctx
// ends or Close is called. sources come in order of precedence: the first
// one that has given a good document is in force, and a later source's
// document is applied only while no earlier one has given one. So with
// [etcd, file], a service that starts while etcd is unreachable runs on the
// file, and etcd takes over once it answers; an etcd that fails later, or
// is sent a bad document, leaves its last good rules in force (it never
// falls back to an older file).
//
// Every read is parsed and validated before anything is applied, and a
// refused read changes nothing; the reason is logged, passed to the
// callbacks and kept in Status (for the source in force) and Sources.
//
// Sync returns once it knows what to start with: when some source has given
// a good document and every source before it has answered, or after
// WithStartTimeout with the best document read by then. If no source gave a
// good document, Sync stops them all and returns their errors.
func Sync(ctx context.Context, target Loader, sources []Source, opts ...WatchOption) (*Syncer, error) {
	if len(sources) == 0 {
		return nil, errors.New("rules: Sync needs at least one source")
	}
	cfg := newWatchConfig(opts)
	s := &Syncer{
		k: &keeper{target: target, cfg: cfg}, sources: sources, settled: make(chan struct{}),
		state: make([]SourceStatus, len(sources)), docs: make([]*Document, len(sources)), active: -1,
	}
	for i, src := range sources {
		s.state[i].Name = src.Name()
	}
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	for i, src := range sources {
		s.wg.Add(1)
		go s.run(runCtx, i, src)
	}
	timer := time.NewTimer(cfg.startup)
	defer timer.Stop()
	select {
	case <-s.settled:
	case <-timer.C:
	case <-ctx.Done():
	}
	s.mu.Lock()
	active, errs := s.active, s.errorsLocked()
	s.mu.Unlock()
	if active < 0 {
		s.Close()
		if len(errs) == 0 {
			errs = append(errs, fmt.Errorf("no source answered within %v", cfg.startup))
		}
		return nil, fmt.Errorf("rules: no source gave a good document: %w", errors.Join(errs...))
	}
	return s, nil
}

func (s *Syncer) run(ctx context.Context, i int, src Source) {
	defer s.wg.Done()
	err := src.Run(ctx, func(r Read) { s.take(i, r) })
	if err != nil && ctx.Err() == nil {
		// The source stopped for good; record why, like a failed read.
		s.take(i, Read{Err: fmt.Errorf("%s stopped: %w", src.Name(), err)})
	}
}

// take handles one read of source i.
func (s *Syncer) take(i int, r Read) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.state[i]
	st.Reads++
	st.Revision = r.Revision
	doc, err := parse(st.Name, r.Data, r.Err)
	if err != nil {
		st.OK, st.LastError = false, err
		if s.active < 0 || i == s.active {
			_ = s.k.fail(st.Name, err) // the rules in force stay; the status says why
		} else {
			s.k.cfg.log.Warn("rules: source refused, another one is in force", slog.String("source", st.Name),
				slog.String("in_force", s.state[s.active].Name), slog.Any("error", err))
		}
		s.settleLocked()
		return
	}
	st.OK, st.Version, s.docs[i] = true, doc.Version(), doc
	if s.active < 0 || i <= s.active {
		if s.k.apply(st.Name, doc, false) == nil && i != s.active {
			if s.active >= 0 {
				s.state[s.active].InForce = false
			}
			s.active, st.InForce = i, true
			s.k.cfg.log.Info("rules: source in force", slog.String("source", st.Name))
		}
	}
	s.settleLocked()
}

// settleLocked closes settled once the start-up question is answered: a
// source is in force and every source before it has answered, or every
// source has answered.
func (s *Syncer) settleLocked() {
	if s.done {
		return
	}
	upTo := len(s.state)
	if s.active >= 0 {
		upTo = s.active
	}
	for _, st := range s.state[:upTo] {
		if st.Reads == 0 {
			return
		}
	}
	s.done = true
	close(s.settled)
}

func (s *Syncer) errorsLocked() []error {
	var errs []error
	for _, st := range s.state {
		if st.LastError != nil {
			errs = append(errs, st.LastError)
		}
	}
	return errs
}

// Status returns the state of the rules in force: Source names where they
// came from; LastError is the latest refusal of that source's reads.
func (s *Syncer) Status() Status { return s.k.status() }

// Sources returns each source's state, in order of precedence.
func (s *Syncer) Sources() []SourceStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SourceStatus(nil), s.state...)
}

// Document returns the document in force, for its Adaptive and Alerting
// sections; WithOnReload reports each new one.
func (s *Syncer) Document() *Document { return s.k.document() }

// Close stops every source and waits for their goroutines to end. The rules
// in force stay. Close is idempotent.
func (s *Syncer) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}
