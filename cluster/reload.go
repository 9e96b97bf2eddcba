package cluster

import (
	"context"
	"errors"
	"fmt"
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
// While a node's breaker is open, its prober (not a caller's 20ms) checks
// the node every probeEvery, loads the scripts used so far into it, and
// closes the breaker, so decisions come from Redis again soon after it is
// back (probe.go).

// errScriptLoading: a call hit NOSCRIPT and its deadline came before the
// script was loaded again (or the load failed). Redis is up.
var errScriptLoading = errors.New("script being loaded after NOSCRIPT")

// probeEvery is how often a prober checks its node while the breaker is open.
const probeEvery = 100 * time.Millisecond

// loadBudget bounds one background Redis call (a script load, a probe, a
// heartbeat): its own budget, not a caller's.
func (s *RedisTokenServer) loadBudget() time.Duration {
	return max(10*s.cf.Timeout, 250*time.Millisecond)
}

type scriptLoads struct {
	mu     sync.Mutex
	m      map[loadKey]*loading
	closed bool
	wg     sync.WaitGroup
}

// loadKey is one script on one node: each node holds its own script
// cache, and a promoted replica starts with none.
type loadKey struct {
	n  *node
	sc *script
}

type loading struct {
	done chan struct{}
	err  error
}

// eval runs sc by SHA1 on the node n holds its keys (args[3]); after
// NOSCRIPT it waits for the one load of sc into n in flight (starting it
// if none) and runs it by SHA1 once more.
func (s *RedisTokenServer) eval(ctx context.Context, n *node, sc *script, args []any) (any, error) {
	if !sc.used.Load() {
		sc.used.Store(true) // the prober reloads it after an outage
	}
	rdb := s.client()
	v, err := sc.evalsha(ctx, rdb, args)
	if err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return v, err
	}
	if err := s.awaitLoad(ctx, n, sc); err != nil {
		return nil, err
	}
	v, err = sc.evalsha(ctx, rdb, args)
	var re redis.Error
	if err != nil && (!errors.As(err, &re) || redis.HasErrorPrefix(err, "NOSCRIPT")) {
		// Out of time after the wait, or the slot moved to a node that
		// has not got the script yet: Redis answered this call a moment
		// ago, so this says nothing against it.
		err = fmt.Errorf("%w: %w", errScriptLoading, err)
	}
	return v, err
}

// evalKey is eval for a background call on key's node.
func (s *RedisTokenServer) evalKey(ctx context.Context, key string, sc *script, args []any) (any, error) {
	return s.eval(ctx, s.nodes.nodeFor(ctx, key), sc, args)
}

// awaitLoad waits, until ctx's deadline, for sc to be loaded into n.
func (s *RedisTokenServer) awaitLoad(ctx context.Context, n *node, sc *script) error {
	l, err := s.startLoad(n, sc)
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

// startLoad returns the load of sc into n in flight, starting one if none
// is. The load goes to n alone (SCRIPT LOAD through a cluster client would
// go to every master, and fail while any is down).
func (s *RedisTokenServer) startLoad(n *node, sc *script) (*loading, error) {
	ld := &s.loads
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if ld.closed {
		return nil, fmt.Errorf("%w: token server closed", errScriptLoading)
	}
	k := loadKey{n, sc}
	if l := ld.m[k]; l != nil {
		return l, nil
	}
	l := &loading{done: make(chan struct{})}
	if ld.m == nil {
		ld.m = map[loadKey]*loading{}
	}
	ld.m[k] = l
	ld.wg.Add(1)
	go func() {
		defer ld.wg.Done()
		ctx, cancel := context.WithTimeout(s.bg, s.loadBudget())
		var rdb redis.Scripter = s.client()
		if c := n.client.Load(); c != nil {
			rdb = c
		}
		l.err = rdb.ScriptLoad(ctx, sc.src).Err()
		cancel()
		ld.mu.Lock()
		delete(ld.m, k)
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
