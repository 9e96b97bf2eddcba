package flowhttp

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// WithHedging sends a second copy of an idempotent call (a hedge) when the
// first has not answered within after, and takes whichever answers first
// and is not overloaded; the other is cancelled. A hedge is asked of the
// resource's rules as a retry (flow.WithRetry), so a retry_budget rule
// bounds hedges and retries together, and a client_throttle may refuse it.
// Default: off. Requests with a body are hedged only when they have
// GetBody; a non-idempotent request never is.
func WithHedging(after time.Duration) TransportOption {
	return func(t *transport) { t.hedge = after }
}

// answer is what one copy of a hedged call got: copy 0 is the first, 1
// the hedge.
type answer struct {
	resp   *http.Response
	err    error
	cancel context.CancelFunc
	which  int
}

// send sends one copy of r under a context of its own, so the copy that
// loses can be cancelled alone; the answer goes to ch.
func (t *transport) send(r *http.Request, which int, ch chan<- answer) context.CancelFunc {
	ctx, cancel := context.WithCancel(r.Context())
	go func() {
		resp, err := t.base.RoundTrip(r.WithContext(ctx))
		ch <- answer{resp, err, cancel, which}
	}()
	return cancel
}

// hedged sends r and, when it has not answered within t.hedge and the
// rules of res allow a retry, a hedge. It returns once every copy sent has
// answered: the loser is cancelled, and its answer drained and closed.
func (t *transport) hedged(r *http.Request, res string) (*http.Response, error) {
	ch := make(chan answer, 2)
	var cancels [2]context.CancelFunc
	cancels[0] = t.send(r, 0, ch)
	timer := time.NewTimer(t.hedge)
	defer timer.Stop()
	select {
	case a := <-ch:
		return a.keep()
	case <-timer.C:
	}
	r2, err := rewind(r)
	if err != nil {
		return (<-ch).keep()
	}
	pm, err := t.eng.Entry(res, flow.WithRetry(), flow.WithContext(r.Context()))
	if err != nil { // the budget or a throttle refused the hedge
		return (<-ch).keep()
	}
	cancels[1] = t.send(r2, 1, ch)
	first := <-ch
	if !t.overloaded(first.resp, first.err) {
		cancels[1-first.which]() // the other copy is not needed
	}
	second := <-ch
	win, lose := first, second
	if t.overloaded(first.resp, first.err) && !t.overloaded(second.resp, second.err) {
		win, lose = second, first
	}
	hedge := first
	if hedge.which != 1 {
		hedge = second
	}
	// The hedge's permit hears how the hedge fared (a cancelled hedge is
	// not an overloaded backend).
	if t.overloaded(hedge.resp, hedge.err) {
		pm.Exit(flow.WithError(&overloadError{err: hedge.err, status: status(hedge.resp)}))
	} else {
		pm.Exit()
	}
	lose.drop()
	return win.keep()
}

func status(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// keep returns the answer to the caller: the copy's context lives until
// the body is closed.
func (a answer) keep() (*http.Response, error) {
	if a.err != nil || a.resp == nil {
		a.cancel()
		return a.resp, a.err
	}
	a.resp.Body = &cancelBody{ReadCloser: a.resp.Body, cancel: a.cancel}
	return a.resp, nil
}

// drop cancels a losing copy and discards what it got.
func (a answer) drop() {
	a.cancel()
	if a.resp != nil {
		io.Copy(io.Discard, io.LimitReader(a.resp.Body, 64<<10))
		a.resp.Body.Close()
	}
}

// cancelBody cancels its copy's context when closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
