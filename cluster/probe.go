package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Probers and outage logs, one per unhealthy node.
//
// When a node's breaker opens, a prober starts for that node alone. Every
// probeEvery it checks the node (a raw dial, then PING), loads the
// scripts used so far into it, and closes its breaker; on a cluster it
// first asks the client to reload its slot map, and ends the outage as
// soon as the map gives the node's slots to another node (a promoted
// replica, a failover, a reshard): calls on those slots then go to their
// new owner. It ends with the outage, so a healthy server runs none.
//
// The prober owns the outage's log: one line when it starts, a summary
// every summaryEvery while it lasts, one line when it ends, with
// durations on the monotonic clock. go-redis logs its own dial failures
// through a process-wide logger: RedisLogger routes them to ours.

// errServedElsewhere ends a probe: the slot map gives the node's slots to
// another node.
var errServedElsewhere = errors.New("its slots are served by another node")

// startProber starts n's prober unless one runs; cause opened the breaker.
func (s *RedisTokenServer) startProber(n *node, cause error) {
	if !n.probing.CompareAndSwap(false, true) {
		return
	}
	s.probersMu.Lock()
	defer s.probersMu.Unlock()
	if s.probersClosed {
		n.probing.Store(false)
		return
	}
	s.probers.Add(1)
	go s.prober(n, cause)
}

// prober probes n every probeEvery until its breaker is closed (by a probe
// or a call's half-open try) or Close; it logs the outage.
func (s *RedisTokenServer) prober(n *node, cause error) {
	defer s.probers.Done()
	began := time.Now()
	rejected, failed := n.rejected.Load(), n.failed.Load()
	s.logNode(slog.LevelWarn, "cluster: Redis node unavailable; calls on its keys use their rules' fallback", n, cause)
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	lastSummary := began
	var last error
	how := "a call got through" // unless a probe closed the breaker
	// The first probe goes at once: a breaker opened by a hiccup (a loaded
	// host) closes within a round trip.
	first := true
	for {
		if !n.br.Open() {
			n.probing.Store(false)
			// A breaker that opened again between the check and the store
			// found probing set and started no prober: carry on.
			if !n.br.Open() || !n.probing.CompareAndSwap(false, true) {
				s.logNode(slog.LevelInfo, "cluster: Redis node answers again, or its slots moved; its keys are decided by Redis", n, nil,
					slog.Duration("outage", time.Since(began)), slog.String("how", how),
					slog.Uint64("rejected", n.rejected.Load()-rejected), slog.Uint64("failed", n.failed.Load()-failed))
				return
			}
		}
		if !first {
			select {
			case <-s.stop:
				n.probing.Store(false)
				return
			case <-t.C:
			}
		}
		first = false
		if last = s.probe(n); last == nil || errors.Is(last, errServedElsewhere) {
			how = "it answers"
			if last != nil {
				how = last.Error()
			}
			n.br.Close()
			continue
		}
		if time.Since(lastSummary) >= summaryEvery {
			lastSummary = time.Now()
			s.logNode(slog.LevelWarn, "cluster: Redis node still unavailable", n, last,
				slog.Duration("outage", time.Since(began)),
				slog.Uint64("rejected", n.rejected.Load()-rejected), slog.Uint64("failed", n.failed.Load()-failed))
		}
	}
}

// summaryEvery spaces the log lines of a long outage.
const summaryEvery = 10 * time.Second

// probe checks n, loads every script used so far into it, and reports
// nil when its breaker may close (errServedElsewhere when its slots moved).
func (s *RedisTokenServer) probe(n *node) error {
	ctx, cancel := context.WithTimeout(s.bg, s.loadBudget())
	defer cancel()
	if s.nodes.cc != nil && n != s.nodes.one {
		if err := s.moved(ctx, n); err != nil {
			return err
		}
		c := n.client.Load()
		o := c.Options()
		if err := rawDial(ctx, o.Dialer, o.Network, o.Addr); err != nil {
			return err
		}
		if _, err := do(ctx, c, "ping"); err != nil {
			return err
		}
	} else if err := s.pingServer(ctx); err != nil {
		return err
	}
	missing, err := s.missingScripts(ctx, n)
	if err != nil {
		return err
	}
	for _, sc := range missing {
		if l, err := s.startLoad(n, sc); err != nil {
			return err
		} else if <-l.done; l.err != nil {
			return l.err
		}
	}
	return nil
}

// missingScripts returns the scripts used so far that n lacks (a restart,
// a flush, a promoted replica), asked in one SCRIPT EXISTS: a node that
// only missed its deadlines under load keeps its scripts, and its breaker
// closes after one round trip more.
func (s *RedisTokenServer) missingScripts(ctx context.Context, n *node) ([]*script, error) {
	var used []*script
	var shas []string
	for _, sc := range builtScripts() {
		if sc.used.Load() {
			used = append(used, sc)
			shas = append(shas, sc.sha)
		}
	}
	if len(used) == 0 {
		return nil, nil
	}
	var rdb redis.Scripter = s.client()
	if c := n.client.Load(); c != nil {
		rdb = c
	}
	have, err := rdb.ScriptExists(ctx, shas...).Result()
	if err != nil {
		return nil, err
	}
	var missing []*script
	for i, sc := range used {
		if i >= len(have) || !have[i] {
			missing = append(missing, sc)
		}
	}
	return missing, nil
}

// moved asks the cluster client for a fresh slot map and reports
// errServedElsewhere once it gives n's sample slot to another node.
func (s *RedisTokenServer) moved(ctx context.Context, n *node) error {
	s.nodes.cc.ReloadState(ctx) // in the background, at most one at a time
	sk := n.sample.Load()
	if sk == nil {
		return nil
	}
	c, err := s.nodes.cc.MasterForKey(ctx, *sk)
	if err == nil && c.Options().Addr != n.addr {
		return errServedElsewhere
	}
	return nil
}

// rawDial opens and closes one connection: it tells a dead node without a
// go-redis log line per probe.
func rawDial(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), network, addr string) error {
	if dial == nil {
		return nil
	}
	nc, err := dial(ctx, network, addr)
	if err == nil {
		nc.Close()
	}
	return err
}

// pingServer checks the server's own client (one node: a single Redis, a
// failover client, a Ring, or a cluster without a slot map).
func (s *RedisTokenServer) pingServer(ctx context.Context) error {
	rdb := s.client()
	if s.conn.dial != nil {
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
		if _, err := do(ctx, fresh, "ping"); err != nil {
			return err
		}
	}
	return nil
}

func (s *RedisTokenServer) logNode(level slog.Level, msg string, n *node, err error, attrs ...slog.Attr) {
	if s.cf.log == nil {
		return
	}
	attrs = append(attrs, slog.String("instance", s.cf.id), slog.String("node", n.addr))
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	s.cf.log.LogAttrs(context.Background(), level, msg, attrs...)
}
