package alerting

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// queue delivers one sink's notifications on its own goroutine, so a slow
// or failing sink never holds up evaluation or the other sinks. Enqueueing
// never blocks: a full queue drops the notification and counts it.
type queue struct {
	sink   Sink
	name   string
	repeat time.Duration // guarded by Alerter.mu (SetConfig changes it)
	own    bool          // the sink sets its own repeat (Repeater)
	ch     chan item
	done   chan struct{} // closed when the worker returns

	started bool // guarded by Alerter.mu

	sent, failed, dropped atomic.Uint64
}

// item is a notification, or a barrier that Flush waits on.
type item struct {
	alert   Alert
	barrier chan struct{}
}

func newQueue(s Sink, i, size int, repeat time.Duration) *queue {
	q := &queue{sink: s, repeat: repeat, ch: make(chan item, size), done: make(chan struct{})}
	if r, ok := s.(Repeater); ok && r.RepeatInterval() > 0 {
		q.repeat, q.own = r.RepeatInterval(), true
	}
	if st, ok := s.(fmt.Stringer); ok {
		q.name = st.String()
	} else {
		q.name = fmt.Sprintf("sink%d", i)
	}
	return q
}

// offer queues a without blocking; false when the queue is full.
func (q *queue) offer(a Alert) bool {
	select {
	case q.ch <- item{alert: a}:
		return true
	default:
		q.dropped.Add(1)
		return false
	}
}

// run delivers until quit, then delivers what is still queued until ctx
// is cancelled (Close's drain timeout), dropping the rest.
func (q *queue) run(ctx context.Context, quit <-chan struct{}, log *slog.Logger) {
	defer close(q.done)
	for {
		select {
		case it := <-q.ch:
			q.deliver(ctx, it, log)
		case <-quit:
			for {
				select {
				case it := <-q.ch:
					q.deliver(ctx, it, log)
				default:
					return
				}
			}
		}
	}
}

func (q *queue) deliver(ctx context.Context, it item, log *slog.Logger) {
	if it.barrier != nil {
		close(it.barrier)
		return
	}
	if ctx.Err() != nil {
		q.dropped.Add(1)
		return
	}
	if err := q.sink.Notify(ctx, it.alert); err != nil {
		q.failed.Add(1)
		if log != nil {
			log.Warn("alerting: sink failed", "sink", q.name, "alert", it.alert.Name,
				"resource", it.alert.Resource, "status", it.alert.Status, "err", err)
		}
		return
	}
	q.sent.Add(1)
}

// Stats counts notifications over the alerter's life, summed over sinks.
type Stats struct {
	Sent    uint64 // Notify returned nil
	Failed  uint64 // Notify returned an error (after the sink's own retries)
	Dropped uint64 // the sink's queue was full, or Close gave up waiting
}
