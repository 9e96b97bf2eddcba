package alerting

import (
	"context"
	"time"
)

// Start runs Evaluate every Interval on a goroutine owned by the alerter
// until Close. Calling it again, after Close, or with invalid options does
// nothing. The pace comes from the alerter's clock (WithClock); on a
// clock.Fake call Evaluate instead.
func (a *Alerter) Start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started || a.closed || a.err != nil {
		return
	}
	a.started = true
	ctx, cancel := context.WithCancel(context.Background())
	a.stopLoop, a.loopDone = cancel, make(chan struct{})
	go a.loop(ctx, a.loopDone)
}

func (a *Alerter) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		if a.clk.Sleep(ctx, a.Config().Interval) != nil { // SetConfig may change it
			return
		}
		if err := a.Evaluate(ctx); err != nil {
			return // cancelled or closed
		}
	}
}

// Flush waits until every notification queued so far has been handed to
// its sink (delivered, failed or dropped), or ctx is done.
func (a *Alerter) Flush(ctx context.Context) error {
	a.mu.Lock()
	var started []*queue
	for _, q := range a.queues {
		if q.started {
			started = append(started, q)
		}
	}
	a.mu.Unlock()
	for _, q := range started {
		b := make(chan struct{})
		select {
		case q.ch <- item{barrier: b}:
		case <-q.done:
			continue
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-b:
		case <-q.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close stops Start's goroutine, lets each sink deliver what is queued for
// up to the drain timeout (WithDrainTimeout), then cancels the sinks'
// context, drops the rest and waits for every sink goroutine. It is
// idempotent and always returns nil; Evaluate returns ErrClosed after it.
func (a *Alerter) Close() error {
	a.closeOnce.Do(func() {
		a.mu.Lock()
		a.closed = true // from here no queue starts
		stop, loopDone := a.stopLoop, a.loopDone
		var started []*queue
		for _, q := range a.queues {
			if q.started {
				started = append(started, q)
			}
		}
		a.mu.Unlock()
		if stop != nil {
			stop()
			<-loopDone
		}
		close(a.quit)
		timer := time.AfterFunc(a.drain, a.cancel)
		for _, q := range started {
			<-q.done
		}
		timer.Stop()
		a.cancel()
	})
	return nil
}
