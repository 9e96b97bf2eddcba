package envoyrls

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// RedisStore keeps the fixed-window counters in Redis (a single server,
// Redis Cluster or a sentinel-managed master), so every replica of the
// service shares them. Each counter is INCRBY then EXPIRE, as
// envoyproxy/ratelimit sends them, so both count alike and agree on every
// key.
//
// By default the store batches: a few sender goroutines (WithPipelines)
// each send one pipeline at a time, and the counters of the requests that
// arrive while every sender is busy wait in a queue and go out together in
// the next pipeline (up to WithMaxBatch commands). Under load many
// requests share one round trip; a request finding a sender idle is sent
// at once (no window to wait out; the hand-off to the sender and back is
// what an idle store adds). envoyproxy/ratelimit sends one
// pipeline per request: the commands and keys are the same, only their
// grouping into round trips differs. On a cluster go-redis splits each
// pipeline per node, one round trip to each node holding one of its keys.
//
// A RedisStore with senders must be closed; Close stops them.
type RedisStore struct {
	rdb     redis.UniversalClient
	senders int
	maxCmds int

	mu     sync.Mutex
	queue  []*pending    // requests waiting for a sender, in arrival order
	closed atomic.Bool   // set under mu: nothing joins the queue after it
	wake   chan struct{} // a token per queue change a sender may not have seen
	quit   chan struct{} // closed by Close
	wg     sync.WaitGroup

	pipelines, requests, commands atomic.Uint64
	inFlight                      atomic.Int64
}

// pending is one Incr call waiting in the queue or in a pipeline. The
// sender reads and writes in, a copy of the caller's slice, never the
// caller's own, so a caller gone with its context leaves nothing shared.
type pending struct {
	ctx  context.Context
	in   []Incr
	err  error         // set before done is closed
	done chan struct{} // closed when in's counts (or err) are set
}

// ErrStoreClosed is what Incr returns once the store is closed.
var ErrStoreClosed = errors.New("envoyrls: store closed")

// RedisOption configures a RedisStore.
type RedisOption func(*RedisStore)

// WithPipelines sets how many pipelines may be in flight at once: the
// number of sender goroutines. Default 2. n = 0 turns batching off: each
// Incr sends its own pipeline from the caller's goroutine, as
// envoyproxy/ratelimit does by default, and no goroutine is started;
// n < 0 keeps the default.
func WithPipelines(n int) RedisOption {
	return func(s *RedisStore) {
		if n >= 0 {
			s.senders = n
		}
	}
}

// WithMaxBatch bounds the commands of one batched pipeline (two per
// counter). A request is never split: one with more counters than the
// bound goes alone. Default 1024; n < 2 keeps the default.
func WithMaxBatch(n int) RedisOption {
	return func(s *RedisStore) {
		if n >= 2 {
			s.maxCmds = n
		}
	}
}

// RedisStoreStats counts what a RedisStore sent since it was built.
type RedisStoreStats struct {
	Pipelines uint64 // pipelines executed: round trips (per node on a cluster)
	Requests  uint64 // Incr calls sent in them
	Commands  uint64 // INCRBY and EXPIRE commands in them
	InFlight  int64  // requests in a pipeline now
	Queued    int    // requests waiting for a sender now
}

var _ Store = (*RedisStore)(nil)

// NewRedisStore returns a store over rdb, batching unless
// WithPipelines(0); the caller closes the store, then rdb.
func NewRedisStore(rdb redis.UniversalClient, opts ...RedisOption) *RedisStore {
	s := &RedisStore{rdb: rdb, senders: 2, maxCmds: 1024, quit: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	s.wake = make(chan struct{}, max(1, s.senders))
	for range s.senders {
		s.wg.Add(1)
		go s.send()
	}
	return s
}

// Stats reports what the store sent, and what it holds now.
func (s *RedisStore) Stats() RedisStoreStats {
	s.mu.Lock()
	queued := len(s.queue)
	s.mu.Unlock()
	return RedisStoreStats{Pipelines: s.pipelines.Load(), Requests: s.requests.Load(), Commands: s.commands.Load(),
		InFlight: s.inFlight.Load(), Queued: queued}
}

// Close stops the senders: the requests still queued fail with
// ErrStoreClosed, the pipelines in flight finish (bounded by rdb's
// timeouts), and Close returns once no sender is left. Later Incr calls
// fail with ErrStoreClosed. Close is idempotent; it does not close rdb.
func (s *RedisStore) Close() error {
	s.mu.Lock()
	first := !s.closed.Swap(true)
	s.failQueued()
	s.mu.Unlock()
	if first {
		close(s.quit)
	}
	s.wg.Wait()
	return nil
}

// failQueued answers every queued request with ErrStoreClosed; s.mu is
// held.
func (s *RedisStore) failQueued() {
	for _, p := range s.queue {
		p.err = ErrStoreClosed
		close(p.done)
	}
	s.queue = nil
}

// Incr implements Store. The expiry is renewed at each hit: a counter
// lives a unit past its last hit, longer than its window, which is enough
// since the next window has another key.
//
// A caller whose ctx ends while its counters wait in the queue or are in
// flight returns ctx.Err() at once; counters already in a pipeline are
// still counted, and queued ones may be. A failed pipeline fails every
// request with a command that failed in it: on a single server or a
// sentinel-managed master all of them, on a cluster those with a key on
// the failing node.
func (s *RedisStore) Incr(ctx context.Context, incrs []Incr) error {
	switch {
	case len(incrs) == 0:
		return nil
	case s.senders == 0:
		if s.closed.Load() {
			return ErrStoreClosed
		}
		return s.incrNow(ctx, incrs)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p := &pending{ctx: ctx, in: append([]Incr(nil), incrs...), done: make(chan struct{})}
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return ErrStoreClosed
	}
	s.queue = append(s.queue, p)
	s.mu.Unlock()
	s.signal()
	select {
	case <-p.done:
		if p.err != nil {
			return p.err
		}
		for i := range incrs {
			incrs[i].Count = p.in[i].Count
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// signal leaves a sender a token. When the buffer is full the token is
// not needed: a sender has yet to take one, and looks at the queue after.
func (s *RedisStore) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// incrNow sends one request's counters in a pipeline of their own, in the
// caller's goroutine and under its context: the unbatched mode.
func (s *RedisStore) incrNow(ctx context.Context, incrs []Incr) error {
	pipe := s.rdb.Pipeline()
	incr, exp := queueIncrs(ctx, pipe, incrs, nil, nil)
	s.inFlight.Add(1)
	pipe.Exec(ctx) // each command holds its outcome; readCounts reads them
	s.inFlight.Add(-1)
	s.count(1, len(incrs))
	return readCounts(incrs, incr, exp)
}

func (s *RedisStore) count(requests, counters int) {
	s.pipelines.Add(1)
	s.requests.Add(uint64(requests))
	s.commands.Add(2 * uint64(counters))
}

// queueIncrs adds INCRBY and EXPIRE per counter to pipe, appending their
// commands to incr and exp.
func queueIncrs(ctx context.Context, pipe redis.Pipeliner, incrs []Incr, incr []*redis.IntCmd, exp []*redis.BoolCmd) ([]*redis.IntCmd, []*redis.BoolCmd) {
	for i := range incrs {
		incr = append(incr, pipe.IncrBy(ctx, incrs[i].Key, int64(incrs[i].Hits)))
		exp = append(exp, pipe.Expire(ctx, incrs[i].Key, secondsDuration(incrs[i].TTL)))
	}
	return incr, exp
}

// readCounts sets the counts of one request from its commands, or returns the
// first error among them. Each command carries its own outcome: go-redis
// sets a failed round trip's error on every command it held, and a reply
// error (WRONGTYPE on a key written by someone else) on its command only,
// so one bad key fails the requests holding it, not its whole pipeline.
func readCounts(incrs []Incr, incr []*redis.IntCmd, exp []*redis.BoolCmd) error {
	for i := range incr {
		if err := incr[i].Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		if err := exp[i].Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
	}
	for i, c := range incr {
		n := c.Val()
		if n < 0 {
			return fmt.Errorf("redis: counter %q holds %d", incrs[i].Key, n)
		}
		incrs[i].Count = uint64(n)
	}
	return nil
}
