package cluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// call runs a decision script (acquire, lease or release) for plan p and
// key: the breaker first, then one round trip under the per-call timeout.
// id and seq make the call's nonce (seq 0: a fresh one); only, when set,
// limits the call to those rules. want is the reply length to decode (0:
// none). It returns the reply and the sequence number used.
func (s *RedisTokenServer) call(ctx context.Context, sc *script, p *plan, key string, id any, seq uint64, tokens, want int, only []int) (reply, uint64, error) {
	start := s.now()
	if !s.br.allow(start) {
		s.st.breakerRejected.Add(1)
		return reply{}, 0, unavailable("breaker", errBreakerOpen)
	}
	if seq == 0 {
		seq = s.seq.Add(1)
	}
	ap := s.args(p, key, id, seq, tokens, only)
	cctx, cancel := s.withTimeout(ctx)
	v, err := sc.run(cctx, s.rdb, *ap)
	if cancel != nil {
		cancel()
	}
	clear(*ap)
	s.argPool.Put(ap)
	end := s.now()
	s.st.latency(end - start)
	if err != nil {
		s.st.errors.Add(1)
		if scriptError(err) {
			s.br.success() // Redis answered: it is up
			return reply{}, seq, err
		}
		s.br.failure(end)
		return reply{}, seq, unavailable("redis", err)
	}
	s.br.success()
	if want == 0 {
		return reply{}, seq, nil
	}
	r, err := decodeReply(v, want)
	if err != nil {
		s.st.errors.Add(1)
		return reply{}, seq, err
	}
	if r.allowed {
		s.st.passed.Add(1)
	} else {
		s.st.blocked.Add(1)
	}
	return r, seq, nil
}

// withTimeout bounds ctx by the per-call timeout unless its own deadline
// is sooner (then nothing is allocated).
func (s *RedisTokenServer) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	dl := time.Now().Add(s.cf.timeout)
	if pdl, ok := ctx.Deadline(); ok && !dl.Before(pdl) {
		return ctx, nil
	}
	return &deadlineCtx{Context: ctx, dl: dl}, nil
}

// deadlineCtx is ctx with an earlier deadline and no timer: go-redis (with
// ContextTimeoutEnabled) sets the socket deadline from Deadline, which is
// what bounds a call to a slow Redis, so the timer, goroutine-free as it
// is, and the four allocations of context.WithTimeout buy nothing here.
// Done and Err stay the parent's: cancelling the caller still stops the
// call where go-redis watches for it.
type deadlineCtx struct {
	context.Context
	dl time.Time
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.dl, true }

// args lays out EVALSHA's arguments in a pooled slice: command and sha
// (filled by script.run), numkeys, keys, then ARGV as prelude.lua reads it.
func (s *RedisTokenServer) args(p *plan, key string, id any, seq uint64, tokens int, only []int) *[]any {
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
	a = append(a, id, seq, tokens, a[2])
	if only == nil {
		a[len(a)-1] = p.nrules
		a = append(a, p.params...)
	} else {
		for _, i := range only {
			a = append(a, p.params[i*paramsPerRule:(i+1)*paramsPerRule]...)
		}
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
