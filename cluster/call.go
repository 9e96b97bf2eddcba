package cluster

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// call runs a decision main (acquire, lease, release or settle) for plan p and
// key: the breaker of the node holding the keys first, then one round
// trip under the per-call timeout. nonce is sent last when p.nonce (see
// prelude.lua); only, when set, limits the call to those rules. want is
// the reply length to decode (0: none).
func (s *RedisTokenServer) call(ctx context.Context, main int, p *plan, key string, nonce, tokens any, want int, only []int) (reply, error) {
	start := s.now()
	mask := p.mask
	if only != nil {
		mask = p.concMask
	}
	if main == mainAcquire && p.n == 1 {
		main, mask = mainAcquire1, 1<<(p.code1-1)
	}
	ap := s.args(p, key, nonce, tokens, only, main == mainSettle)
	first, _ := (*ap)[3].(string) // every plan has a key; they share one slot
	n := s.nodes.nodeFor(ctx, first)
	if !n.br.Allow(start) {
		clear(*ap)
		s.argPool.Put(ap)
		s.st.BreakerRejected.Add(1)
		n.rejected.Add(1)
		return reply{}, s.nodeDown("breaker", n, errBreakerOpen)
	}
	cctx, cancel := s.withTimeout(ctx)
	v, err := s.eval(cctx, n, scriptFor(main, mask), *ap)
	if cancel != nil {
		cancel()
	}
	clear(*ap)
	s.argPool.Put(ap)
	end := s.now()
	s.st.Latency(end - start)
	if err != nil {
		return reply{}, s.failed(ctx, n, first, start, end, err)
	}
	n.br.SucceededAt(end)
	if main == mainSettle {
		s.st.noteSettleReply(v)
	}
	if want == 0 {
		return reply{}, nil
	}
	r, err := decodeReply(v, want)
	if err != nil {
		s.st.Errors.Add(1)
		return reply{}, err
	}
	if r.allowed {
		s.st.Passed.Add(1)
	} else {
		s.st.Blocked.Add(1)
	}
	return r, nil
}

// failed sorts out a call on n, sent at start, that failed at end: Redis
// answered (a script error, NOSCRIPT, a cluster redirect it could not
// follow), the caller gave up, or the node did not answer, which counts
// against its breaker (see guard.Breaker for which timeouts count).
func (s *RedisTokenServer) failed(ctx context.Context, n *node, key string, start, end int64, err error) error {
	s.st.Errors.Add(1)
	switch {
	case scriptError(err):
		n.br.SucceededAt(end) // Redis answered: it is up
		return err
	case errors.Is(err, errScriptLoading) || clusterAnswer(err):
		// NOSCRIPT (the load runs on its own budget) or a slot on the
		// move: the node answered, the decision falls back.
		n.br.SucceededAt(end)
		return s.nodeDown("redis", n, err)
	case ctx != nil && ctx.Err() != nil:
		// The caller gave up (not our timeout): says nothing about Redis.
		return unavailable("redis", err)
	}
	n.failed.Add(1)
	if n.br.FailedCall(start, end, timedOut(err)) {
		n.sample.Store(&key)
		s.startProber(n, err)
	}
	return s.nodeDown("redis", n, err)
}

// clusterAnswer reports a Redis Cluster reply about a slot (it is being
// migrated, not served, or served elsewhere): the node that sent it is up.
func clusterAnswer(err error) bool {
	for _, p := range []string{"CLUSTERDOWN", "TRYAGAIN", "MOVED", "ASK"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// withTimeout bounds ctx by the per-call timeout unless its own deadline
// is sooner (then nothing is allocated).
func (s *RedisTokenServer) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	dl := time.Now().Add(s.cf.Timeout)
	if s.conn.needDone {
		return context.WithDeadline(ctx, dl)
	}
	if pdl, ok := ctx.Deadline(); ok && !dl.Before(pdl) {
		return ctx, nil
	}
	return &deadlineCtx{Context: ctx, dl: dl}, nil
}

// deadlineCtx is ctx with an earlier deadline and no timer, for the
// clients the server built (see ownClient): their sockets take the
// deadline from Deadline, they dial once and bound pool waits by the
// timeout, so nothing waits on Done, and the timer and four allocations
// of context.WithTimeout would buy nothing. Done and Err stay the
// parent's: cancelling the caller still stops the call where go-redis
// watches for it.
type deadlineCtx struct {
	context.Context
	dl time.Time
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.dl, true }

// args lays out EVALSHA's arguments in a pooled slice: command and sha
// (filled by script.run), numkeys, keys, then ARGV as prelude.lua reads it
// (with every rule's maxDebt before the nonce when settle: settle.lua).
// tokens is boxed here: small counts (< 256) cost no allocation.
func (s *RedisTokenServer) args(p *plan, key string, nonce, tokens any, only []int, settle bool) *[]any {
	ap, _ := s.argPool.Get().(*[]any)
	if ap == nil {
		ap = new([]any)
	}
	a := (*ap)[:0]
	n := p.n
	if only != nil {
		n = len(only)
	}
	a = append(a, nil, nil, p.numkeys)
	if only != nil {
		a[2] = strconv.Itoa(n)
	}
	switch {
	case only == nil && key == "" && p.global != nil:
		a = append(a, p.global...)
	default:
		p.eachKey(key, func(i int, k string) {
			if only == nil || contains(only, i) {
				a = append(a, k)
			}
		})
	}
	a = append(a, tokens)
	if only == nil {
		a = append(a, p.params...)
	} else {
		for _, i := range only {
			a = append(a, p.params[p.paramAt[i]:p.paramAt[i+1]]...)
		}
	}
	if settle {
		a = append(a, p.debts...)
	}
	if p.nonce {
		a = append(a, nonce)
	}
	*ap = a
	return ap
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// scriptError reports an error Redis answered with for the script itself
// (a bug or bad input, "ERR ..."), as opposed to Redis being unreachable,
// loading, failing over or down: only the latter trip the breaker.
func scriptError(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "ERR ") || strings.HasPrefix(msg, "WRONGTYPE")
}

// timedOut reports an error of a call that ran out of time (as opposed to
// a refused connection or a closed socket).
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
