package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// heartbeatKey is the sorted set of live instances (one key, any slot).
func (s *RedisTokenServer) heartbeatKey() string { return s.cf.prefix + "{instances}" }

// Heartbeat announces this instance now and updates Instances from the
// answer. The background loop calls it every WithHeartbeat interval; call
// it yourself when that loop is off.
func (s *RedisTokenServer) Heartbeat(ctx context.Context) (int, error) {
	return s.beat(ctx, true)
}

func (s *RedisTokenServer) beat(ctx context.Context, join bool) (int, error) {
	j := "1"
	if !join {
		j = "0"
	}
	v, err := s.evalKey(ctx, s.heartbeatKey(), heartbeatScript(), []any{nil, nil, "1", s.heartbeatKey(), s.cf.id, s.cf.beatTTL.Microseconds(), j})
	if err != nil {
		if join {
			s.trust.failed()
		}
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("cluster: heartbeat reply: got %v, want an integer", v)
	}
	if join {
		n = max(1, n)
		s.live.Store(n)
		s.instances.Store(s.trust.observe(n, s.cf.Clock.Now(), s.cf.beatTTL))
	}
	return int(n), nil
}

// loop runs the heartbeat, renews held concurrency permits and returns
// expired leases, until Close.
func (s *RedisTokenServer) loop() {
	defer close(s.done)
	every := s.cf.beatEvery
	renewEvery := s.cf.concTTL / 3
	if every <= 0 || every > renewEvery {
		every = renewEvery
	}
	if s.leases != nil && s.leases.cf.Period < every {
		every = s.leases.cf.Period
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var lastBeat, lastRenew time.Time
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			if s.cf.beatEvery > 0 && due(now, lastBeat, s.cf.beatEvery, every) {
				lastBeat = now
				s.background("cluster: heartbeat", func(ctx context.Context) error { _, err := s.Heartbeat(ctx); return err })
			}
			if due(now, lastRenew, renewEvery, every) {
				lastRenew = now
				s.background("cluster: renewing concurrency permits", s.renew)
			}
			if s.leases != nil {
				s.leases.sweep(false)
			}
		}
	}
}

// due reports whether a task run every period, last at last, is due at a
// tick of a ticker running every tick (<= period). Ticks arrive a little
// late at times, so a run at a late tick and one at the next, punctual
// tick are a hair under period apart: half a tick of slack keeps the task
// from skipping that tick and running a whole tick late. With tick ==
// period that was a heartbeat every 2s against a 3s TTL: one beat failed
// during an outage and the instance dropped out of the others' count.
func due(now, last time.Time, period, tick time.Duration) bool {
	return now.Sub(last) >= period-tick/2
}

func (s *RedisTokenServer) background(msg string, f func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), max(10*s.cf.Timeout, 200*time.Millisecond))
	defer cancel()
	if err := f(ctx); err != nil {
		s.logWarn(msg, err)
	}
}

func (s *RedisTokenServer) logWarn(msg string, err error) {
	if s.cf.log != nil {
		s.cf.log.Warn(msg, slog.String("instance", s.cf.id), slog.Any("error", err))
	}
}

// Close stops the background goroutines, gives back unspent leased permits
// and removes this instance from the live set. It closes the client the
// server built for itself, never the one passed to NewRedisTokenServer.
// Calling it again does nothing.
func (s *RedisTokenServer) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.probersMu.Lock()
		s.probersClosed = true
		s.probersMu.Unlock()
		close(s.stop)
		<-s.done
		s.probers.Wait()
		if s.leases != nil {
			s.leases.sweep(true)
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(10*s.cf.Timeout, 200*time.Millisecond))
		defer cancel()
		if _, e := s.beat(ctx, false); e != nil {
			err = errors.Join(err, e)
		}
		s.bgCancel()
		s.closeLoads()
		if s.conn.owned {
			_ = s.client().Close()
		}
	})
	return err
}

// heldLeases are the concurrency permits this instance holds, so the loop
// can renew them: a live instance's permits never expire under it, a
// crashed one's do after the TTL.
type heldLeases struct {
	mu sync.Mutex
	m  map[string]heldLease // lease (nonce) -> what it holds
}

type heldLease struct {
	keys   []string // the concurrency rules' keys
	tokens int
}

func (h *heldLeases) init() { h.m = map[string]heldLease{} }

func (h *heldLeases) add(lease string, p *plan, key string, tokens int) {
	h.mu.Lock()
	h.m[lease] = heldLease{keys: p.concKeys(key), tokens: tokens}
	h.mu.Unlock()
}

func (h *heldLeases) remove(lease string) {
	h.mu.Lock()
	delete(h.m, lease)
	h.mu.Unlock()
}

// renew extends every held permit, one script call per key, and forgets
// the leases Redis no longer holds at any of their keys: released through
// another replica (a remote client's Exit may reach any of them) or
// expired. Without that the map would keep them, and renew them in vain,
// for ever.
func (s *RedisTokenServer) renew(ctx context.Context) error {
	s.held.mu.Lock()
	byKey := map[string][]any{}
	for lease, hl := range s.held.m {
		for _, k := range hl.keys {
			byKey[k] = append(byKey[k], lease, strconv.Itoa(hl.tokens))
		}
	}
	s.held.mu.Unlock()
	live := map[string]bool{}    // a key still holds some of its permits
	unknown := map[string]bool{} // a key's renewal failed: keep the lease
	var errs []error
	for k, pairs := range byKey {
		args := append([]any{nil, nil, "1", k, s.cf.concTTL.Microseconds()}, pairs...)
		v, err := s.evalKey(ctx, k, renewScript(), args)
		counts, ok := v.([]any)
		if err != nil || !ok || len(counts) != len(pairs)/2 {
			if err == nil {
				err = fmt.Errorf("cluster: renew reply: got %T of length %d, want %d integers", v, lenOf(v), len(pairs)/2)
			}
			errs = append(errs, err)
			for i := 0; i < len(pairs); i += 2 {
				unknown[pairs[i].(string)] = true
			}
			continue
		}
		for i, c := range counts {
			lease := pairs[2*i].(string)
			if n, ok := c.(int64); !ok || n > 0 {
				live[lease] = true
			}
		}
	}
	s.held.mu.Lock()
	for _, pairs := range byKey {
		for i := 0; i < len(pairs); i += 2 {
			if lease := pairs[i].(string); !live[lease] && !unknown[lease] {
				delete(s.held.m, lease)
			}
		}
	}
	s.held.mu.Unlock()
	return errors.Join(errs...)
}
