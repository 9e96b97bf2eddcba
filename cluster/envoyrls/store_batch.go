package envoyrls

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// sender is one sender goroutine's reusable buffers.
type sender struct {
	batch []*pending
	incr  []*redis.IntCmd
	exp   []*redis.BoolCmd
}

// send is a sender goroutine: it takes what is queued, sends it as one
// pipeline, answers each request, and waits for a token when the queue is
// empty. It returns once the store is closed.
func (s *RedisStore) send() {
	defer s.wg.Done()
	var sd sender
	for {
		var open bool
		if sd.batch, open = s.take(sd.batch[:0]); !open {
			return
		}
		if len(sd.batch) == 0 {
			select {
			case <-s.wake:
			case <-s.quit:
			}
			continue
		}
		s.exec(&sd)
		clear(sd.batch) // the answered requests are the callers' again
	}
}

// take moves the head of the queue into batch: every request while the
// batch holds at most maxCmds commands, and always the first. A request
// whose caller has left (its context ended) is dropped unsent. With
// requests left over, it leaves a token for another sender. Once the
// store is closed it reports false.
func (s *RedisStore) take(batch []*pending) ([]*pending, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		s.failQueued() // Close did; nothing joined since
		return batch, false
	}
	n, cmds := 0, 0
	for ; n < len(s.queue); n++ {
		p := s.queue[n]
		c := 2 * len(p.in)
		if len(batch) > 0 && cmds+c > s.maxCmds {
			break
		}
		if p.ctx.Err() == nil {
			batch = append(batch, p)
			cmds += c
		}
	}
	left := copy(s.queue, s.queue[n:])
	clear(s.queue[left:])
	s.queue = s.queue[:left]
	if left > 0 {
		s.signal()
	}
	return batch, true
}

// exec sends sd.batch as one pipeline and answers each of its requests.
func (s *RedisStore) exec(sd *sender) {
	ctx, cancel := batchContext(sd.batch)
	defer cancel()
	pipe := s.rdb.Pipeline()
	sd.incr, sd.exp = sd.incr[:0], sd.exp[:0]
	for _, p := range sd.batch {
		sd.incr, sd.exp = queueIncrs(ctx, pipe, p.in, sd.incr, sd.exp)
	}
	s.inFlight.Add(int64(len(sd.batch)))
	pipe.Exec(ctx) // each command holds its outcome; readCounts reads them
	s.inFlight.Add(-int64(len(sd.batch)))
	s.count(len(sd.batch), len(sd.incr))
	at := 0
	for _, p := range sd.batch {
		end := at + len(p.in)
		p.err = readCounts(p.in, sd.incr[at:end], sd.exp[at:end])
		close(p.done)
		at = end
	}
	clear(sd.incr)
	clear(sd.exp)
}

// batchContext is the context of a batch's pipeline: none of its callers'
// own, so that one leaving does not fail the others, but with the latest
// of their deadlines when each has one, so that a pipeline they all gave
// up on is not waited for longer (serve lets deadlines reach the socket).
func batchContext(batch []*pending) (context.Context, context.CancelFunc) {
	var last time.Time
	for _, p := range batch {
		d, ok := p.ctx.Deadline()
		if !ok {
			return context.Background(), func() {}
		}
		if d.After(last) {
			last = d
		}
	}
	return context.WithDeadline(context.Background(), last)
}
