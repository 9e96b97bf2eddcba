package etcdsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/flowgate/flowgate/rules"
)

// Defaults of the options.
const (
	DefaultRequestTimeout = 3 * time.Second
	DefaultCheckInterval  = 5 * time.Second
	DefaultRetryInterval  = time.Second
)

// Option configures New.
type Option func(*config)

type config struct {
	timeout, check, retry time.Duration
	log                   *slog.Logger
}

// WithRequestTimeout bounds each read of the key. Default 3s.
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithCheckInterval sets how often the source reads the key besides
// watching it, to notice an outage (and the end of one) and anything a
// watch missed. Default 5s.
func WithCheckInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.check = d
		}
	}
}

// WithRetryInterval sets how long the source waits before trying again
// after a failed read or a broken watch. Default 1s.
func WithRetryInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.retry = d
		}
	}
}

// WithLogger logs watch restarts and compactions (Info). Default: silent;
// refused reads are logged by the rules.Syncer.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.log = l }
}

// Source watches one etcd key holding a rules document; see the package doc.
type Source struct {
	cli *clientv3.Client
	key string
	cfg config
	// from, when set before Run, is taken as the revision already read, so
	// the first watch starts after it: tests use it to meet compaction.
	from int64
}

var _ rules.Source = (*Source)(nil)

// New returns a source for key, read with cli. The client is the caller's:
// the source never closes it. Build it without a blocking dial, as
// clientv3.New does by default, so that a service can start on a fallback
// source while etcd is unreachable.
func New(cli *clientv3.Client, key string, opts ...Option) *Source {
	cfg := config{timeout: DefaultRequestTimeout, check: DefaultCheckInterval, retry: DefaultRetryInterval}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.log == nil {
		cfg.log = slog.New(slog.DiscardHandler)
	}
	return &Source{cli: cli, key: key, cfg: cfg}
}

// Name returns "etcd KEY".
func (s *Source) Name() string { return "etcd " + s.key }

// Run reads the key and hands each document to deliver until ctx ends; it
// returns ctx.Err(). See rules.Source.
func (s *Source) Run(ctx context.Context, deliver func(rules.Read)) error {
	f := &follower{Source: s, deliver: deliver, rev: s.from, down: s.from == 0}
	for ctx.Err() == nil {
		if f.rev == 0 {
			if f.read(ctx) != nil {
				s.wait(ctx)
				continue
			}
		}
		err := f.watch(ctx)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, rpctypes.ErrCompacted):
			s.cfg.log.Info("etcdsource: watch revision compacted, reading the key again",
				slog.String("key", s.key), slog.Int64("revision", f.rev+1))
			f.rev, f.down = 0, true
		default:
			// Resume after the last revision delivered. A read first tells an
			// outage apart from a watch the server ended (no leader, say).
			s.cfg.log.Info("etcdsource: watch ended, resuming", slog.String("key", s.key),
				slog.Int64("revision", f.rev+1), slog.Any("error", err))
			if f.read(ctx) != nil {
				s.wait(ctx)
			}
		}
	}
	return ctx.Err()
}

// follower is one Run's state: the revision delivered up to, and whether
// the last read failed (so the next good one is delivered even unchanged).
type follower struct {
	*Source
	deliver func(rules.Read)
	rev     int64 // 0: nothing read yet
	down    bool
}

// read gets the key with a linearizable read and delivers it when it
// changed, or when etcd was down or nothing was read yet: after an outage
// that is what tells the Syncer the source answers again (an unchanged
// document costs a parse and no reload). A failure to answer is delivered
// as an error, and so is a missing key when etcd was down or unread.
func (f *follower) read(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, f.cfg.timeout)
	resp, err := f.cli.Get(rctx, f.key)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			f.deliver(rules.Read{Err: fmt.Errorf("etcd key %s: unreachable: %w", f.key, err)})
		}
		f.down = true
		return err
	}
	if f.down {
		f.cfg.log.Info("etcdsource: etcd answers", slog.String("key", f.key), slog.Int64("revision", resp.Header.Revision))
	}
	always := f.down || f.rev == 0
	f.down = false
	if len(resp.Kvs) == 0 {
		if always {
			f.deliver(rules.Read{Err: fmt.Errorf("etcd key %s: not found (revision %d)", f.key, resp.Header.Revision),
				Revision: strconv.FormatInt(resp.Header.Revision, 10)})
		}
		f.rev = max(f.rev, resp.Header.Revision)
		return nil
	}
	kv := resp.Kvs[0]
	if always || kv.ModRevision > f.rev {
		f.deliver(rules.Read{Data: kv.Value, Revision: strconv.FormatInt(kv.ModRevision, 10)})
	}
	f.rev = max(f.rev, kv.ModRevision)
	return nil
}

// watch follows the key after f.rev until the watch fails or ctx ends.
//
// clientv3's Watch blocks until etcd accepts the watch, which is forever
// while etcd is down; it runs on a goroutine of its own so the check reads
// go on meanwhile and report the outage. watch waits for that goroutine
// before returning.
func (f *follower) watch(ctx context.Context) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	created := make(chan clientv3.WatchChan, 1)
	go func() { created <- f.cli.Watch(wctx, f.key, clientv3.WithRev(f.rev+1), clientv3.WithProgressNotify()) }()
	var wch clientv3.WatchChan // nil until created: that case waits
	defer func() {
		cancel()
		if wch == nil {
			<-created // Watch returns once wctx is cancelled
		}
	}()
	tick := time.NewTicker(f.cfg.check)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case wch = <-created:
		case wr, ok := <-wch:
			if !ok {
				return errors.New("watch channel closed")
			}
			if err := wr.Err(); err != nil {
				return err
			}
			f.events(wr)
		case <-tick.C:
			_ = f.read(ctx) // delivers an outage itself
		}
	}
}

// events delivers the newest change of the key in one watch response.
// One key holds one whole document, so the earlier ones in the same batch
// are superseded; a change at or before f.rev was delivered already (by a
// check read that overtook the watch) and is skipped.
func (f *follower) events(wr clientv3.WatchResponse) {
	if len(wr.Events) == 0 {
		return
	}
	ev := wr.Events[len(wr.Events)-1]
	if ev.Kv.ModRevision <= f.rev {
		return
	}
	label := strconv.FormatInt(ev.Kv.ModRevision, 10)
	if ev.Type == clientv3.EventTypeDelete {
		f.deliver(rules.Read{Err: fmt.Errorf("etcd key %s: deleted at revision %s", f.key, label), Revision: label})
	} else {
		f.deliver(rules.Read{Data: ev.Kv.Value, Revision: label})
	}
	f.rev = ev.Kv.ModRevision
}

// wait pauses before a retry, or until ctx ends.
func (s *Source) wait(ctx context.Context) {
	t := time.NewTimer(s.cfg.retry)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
