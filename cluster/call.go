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

// call runs a decision main (acquire, lease or release) for plan p and
// key: the breaker first, then one round trip under the per-call timeout.
// nonce is sent last when p.nonce (see prelude.lua); only, when set, limits the call to
// those rules. want is the reply length to decode (0: none).
func (s *RedisTokenServer) call(ctx context.Context, main int, p *plan, key string, nonce any, tokens, want int, only []int) (reply, error) {
	start := s.now()
	if !s.br.Allow(start) {
		s.st.BreakerRejected.Add(1)
		return reply{}, unavailable("breaker", errBreakerOpen)
	}
	mask := p.mask
	if only != nil {
		mask = p.concMask
	}
	if main == mainAcquire && p.n == 1 {
		main, mask = mainAcquire1, 1<<(p.code1-1)
	}
	sc := scriptFor(main, mask)
	ap := s.args(p, key, nonce, tokens, only)
	cctx, cancel := s.withTimeout(ctx)
	v, err := s.eval(cctx, sc, *ap)
	if cancel != nil {
		cancel()
	}
	clear(*ap)
	s.argPool.Put(ap)
	end := s.now()
	s.st.Latency(end - start)
	if err != nil {
		s.st.Errors.Add(1)
		if scriptError(err) {
			s.succeeded() // Redis answered: it is up
			return reply{}, err
		}
		if errors.Is(err, errScriptLoading) {
			// NOSCRIPT: Redis answered; the load runs on its own budget.
			s.succeeded()
			return reply{}, unavailable("redis", err)
		}
		if ctx != nil && ctx.Err() != nil {
			// The caller gave up (not our timeout): says nothing about Redis.
			return reply{}, unavailable("redis", err)
		}
		if s.br.Failure(end, timedOut(err)) {
			s.logBreaker("cluster: Redis unavailable; breaker open, calls use their rules' fallback", err)
		}
		return reply{}, unavailable("redis", err)
	}
	s.succeeded()
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

// succeeded tells the breaker Redis answered, and logs when that closed it.
func (s *RedisTokenServer) succeeded() {
	if s.br.Success() {
		s.logBreakerClosed()
	}
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
// (filled by script.run), numkeys, keys, then ARGV as prelude.lua reads it.
// tokens is boxed here: small counts (< 256) cost no allocation.
func (s *RedisTokenServer) args(p *plan, key string, nonce any, tokens int, only []int) *[]any {
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
