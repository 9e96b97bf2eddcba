package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Script loading and recovery.
//
// Redis forgets its scripts on a restart, a failover or SCRIPT FLUSH, and
// answers EVALSHA with NOSCRIPT. Re-sending the body with every call that
// hits it (32 callers at once, each under a 20ms timeout) is a storm that
// can time out and open the breaker; so one load per script runs at a
// time, on a budget of its own (loadBudget), and callers wait for it as
// long as their own deadline allows, then send EVALSHA again. NOSCRIPT
// never counts against the breaker: Redis answered.
//
// While the breaker is open, the prober (not a caller's 20ms) checks
// Redis every probeEvery, loads the scripts used so far, and closes the
// breaker, so decisions come from Redis again soon after it is back.

// errScriptLoading: a call hit NOSCRIPT and its deadline came before the
// script was loaded again (or the load failed). Redis is up.
var errScriptLoading = errors.New("script being loaded after NOSCRIPT")

// probeEvery is how often the prober checks Redis while the breaker is open.
const probeEvery = 100 * time.Millisecond

// loadBudget bounds one background Redis call (a script load, a probe, a
// heartbeat): its own budget, not a caller's.
func (s *RedisTokenServer) loadBudget() time.Duration {
	return max(10*s.cf.Timeout, 250*time.Millisecond)
}

type scriptLoads struct {
	mu     sync.Mutex
	m      map[*script]*loading
	closed bool
	wg     sync.WaitGroup
}

type loading struct {
	done chan struct{}
	err  error
}

// eval runs sc by SHA1; after NOSCRIPT it waits for the one load of sc in
// flight (starting it if none) and runs it by SHA1 once more.
func (s *RedisTokenServer) eval(ctx context.Context, sc *script, args []any) (any, error) {
	if !sc.used.Load() {
		sc.used.Store(true) // the prober reloads it after an outage
	}
	rdb := s.client()
	v, err := sc.evalsha(ctx, rdb, args)
	if err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return v, err
	}
	if err := s.awaitLoad(ctx, sc); err != nil {
		return nil, err
	}
	v, err = sc.evalsha(ctx, rdb, args)
	var re redis.Error
	if err != nil && !errors.As(err, &re) {
		// Out of time after the wait: Redis answered this call a moment
		// ago, so this says nothing against it.
		err = fmt.Errorf("%w: %w", errScriptLoading, err)
	}
	return v, err
}

// awaitLoad waits, until ctx's deadline, for sc to be loaded.
func (s *RedisTokenServer) awaitLoad(ctx context.Context, sc *script) error {
	l, err := s.startLoad(sc)
	if err != nil {
		return err
	}
	var expire <-chan time.Time
	if dl, ok := ctx.Deadline(); ok {
		// Our deadline contexts have no Done: a timer bounds the wait (the
		// NOSCRIPT path only, so its allocation is rare).
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		expire = t.C
	}
	select {
	case <-l.done:
		if l.err != nil {
			return fmt.Errorf("%w: %w", errScriptLoading, l.err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-expire:
		return fmt.Errorf("%w: %w", errScriptLoading, context.DeadlineExceeded)
	}
}

// startLoad returns the load of sc in flight, starting one if none is.
func (s *RedisTokenServer) startLoad(sc *script) (*loading, error) {
	ld := &s.loads
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if ld.closed {
		return nil, fmt.Errorf("%w: token server closed", errScriptLoading)
	}
	if l := ld.m[sc]; l != nil {
		return l, nil
	}
	l := &loading{done: make(chan struct{})}
	if ld.m == nil {
		ld.m = map[*script]*loading{}
	}
	ld.m[sc] = l
	ld.wg.Add(1)
	go func() {
		defer ld.wg.Done()
		ctx, cancel := context.WithTimeout(s.bg, s.loadBudget())
		// ScriptLoad reaches every master of a ClusterClient.
		l.err = s.client().ScriptLoad(ctx, sc.src).Err()
		cancel()
		ld.mu.Lock()
		delete(ld.m, sc)
		ld.mu.Unlock()
		close(l.done)
	}()
	return l, nil
}

// closeLoads stops new loads and waits for those in flight (s.bg is
// cancelled first, so they end at once).
func (s *RedisTokenServer) closeLoads() {
	s.loads.mu.Lock()
	s.loads.closed = true
	s.loads.mu.Unlock()
	s.loads.wg.Wait()
}

// prober checks Redis every probeEvery while the breaker is open, until
// Close; it also logs a summary of an outage every summaryEvery.
func (s *RedisTokenServer) prober() {
	defer close(s.proberDone)
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	var lastSummary time.Time
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			if !s.br.Open() {
				continue
			}
			if err := s.probe(); err != nil {
				if now.Sub(lastSummary) >= summaryEvery {
					lastSummary = now
					s.logBreaker("cluster: Redis still unavailable; calls use their rules' fallback", err)
				}
				continue
			}
			lastSummary = time.Time{}
		}
	}
}

// summaryEvery spaces the log lines of a long outage.
const summaryEvery = 10 * time.Second

// probe checks Redis, loads every script used so far, and closes the
// breaker; its error says why it did not.
func (s *RedisTokenServer) probe() error {
	ctx, cancel := context.WithTimeout(s.bg, s.loadBudget())
	defer cancel()
	rdb := s.client()
	if s.conn.dial != nil {
		// A raw dial first: it tells a dead Redis without a go-redis log
		// line per probe.
		if err := s.conn.dial(ctx); err != nil {
			return err
		}
	}
	if _, err := do(ctx, rdb, "ping"); err != nil {
		// go-redis's pool, after PoolSize failed dials, fails every call
		// with the last dial error until its own re-dial, once a second,
		// succeeds. Redis took our dial: a fresh client is back at once.
		var oe *net.OpError
		if s.conn.rebuild == nil || !errors.As(err, &oe) || oe.Op != "dial" {
			return err
		}
		fresh := s.conn.rebuild()
		s.box.set(fresh)
		_ = rdb.Close()
		rdb = fresh
		if _, err := do(ctx, rdb, "ping"); err != nil {
			return err
		}
	}
	for _, sc := range builtScripts() {
		if !sc.used.Load() {
			continue
		}
		if l, err := s.startLoad(sc); err != nil {
			return err
		} else if <-l.done; l.err != nil {
			return l.err
		}
	}
	if s.br.Close() {
		s.logBreakerClosed()
	}
	return nil
}

func (s *RedisTokenServer) logBreaker(msg string, err error) {
	if s.cf.log != nil {
		st := s.Stats()
		s.cf.log.Warn(msg, slog.String("instance", s.cf.id), slog.Uint64("rejected", st.BreakerRejected), slog.Uint64("errors", st.Errors), slog.Any("error", err))
	}
}

func (s *RedisTokenServer) logBreakerClosed() {
	if s.cf.log != nil {
		s.cf.log.Info("cluster: Redis answers again; breaker closed", slog.String("instance", s.cf.id),
			slog.Duration("open_for", time.Duration(s.now()-s.br.OpenedAt())))
	}
}
