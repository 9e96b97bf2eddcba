package cluster

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// LeaseConfig configures leasing (WithLeasing): an instance takes a batch
// of permits from Redis in one round trip and spends them locally.
//
// Where it applies: a request is served from a lease only when every rule
// of it is fixed_window, sliding_window, sliding_log or token_bucket
// (SmoothBursty) without MaxWait; leaky_bucket (spacing), warm_up (the price
// of a permit depends on when it is taken), concurrency (each permit must
// be released) and queueing rules always go to Redis.
//
// What it costs: a leased permit is counted in Redis when the batch is
// taken but admitted up to Period later, and permits parked in one
// instance's batch are not there for the others. So a batch takes at most
// a quarter of what the rules have left (at least one permit): near the
// limit batches shrink towards one, few permits are ever parked, and the
// cluster admits close to what the same rule admits without leasing
// (bench/README.md, "Distributed accuracy", has the measured table). For
// fixed_window a batch also ends at its window's end (from Redis's clock),
// so nothing leased in one window is spent in the next; unspent permits go
// back to the sub-window (sliding_window) or window they were counted in.
// What it saves: a hot key costs one round trip per batch instead of one
// per call. The batch starts at one permit, doubles while batches run out
// before Period ends, and shrinks to what the last one used when it
// expires with permits left (those go back to Redis, as do all unspent
// ones on Close).
type LeaseConfig struct {
	Period   time.Duration // longest a batch is spent; default 100ms
	MaxBatch int           // most permits one batch takes; default 64
	MaxKeys  int           // batches held at once (rule set x key); default 10000, past it calls go to Redis
}

func (lc LeaseConfig) withDefaults() LeaseConfig {
	if lc.Period <= 0 {
		lc.Period = 100 * time.Millisecond
	}
	if lc.MaxBatch <= 0 {
		lc.MaxBatch = 64
	}
	if lc.MaxKeys <= 0 {
		lc.MaxKeys = 10000
	}
	return lc
}

// sweepBudget bounds the entries one background sweep looks at.
const sweepBudget = 512

type leaseKey struct {
	p   *plan
	key string
}

type leaseTable struct {
	s  *RedisTokenServer
	cf LeaseConfig
	mu sync.RWMutex
	m  map[leaseKey]*lease
}

// find is the table's lease for k, or nil.
func (t *leaseTable) find(k leaseKey) *lease {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m[k]
}

// lease is one batch of permits for one rule set and key.
type lease struct {
	mu      sync.Mutex
	left    int    // unspent permits
	taken   int    // permits the batch took
	nonce   string // of the batch, to give sliding-log members back
	at      int64  // Redis time the batch was taken (us), sent back with its return
	until   int64  // local clock.Nanotime when the batch ends
	size    int    // permits the next batch asks for
	refused flow.TokenResult
	refUnt  int64 // a refusal is repeated locally until then
	dead    bool  // swept out of the table: callers holding it look again
}

func newLeaseTable(s *RedisTokenServer, cf LeaseConfig) *leaseTable {
	return &leaseTable{s: s, cf: cf, m: map[leaseKey]*lease{}}
}

func (t *leaseTable) get(p *plan, key string) *lease {
	k := leaseKey{p, key}
	l := t.find(k)
	if l != nil {
		return l
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if l = t.m[k]; l == nil && len(t.m) < t.cf.MaxKeys {
		l = &lease{size: 1}
		t.m[k] = l
	}
	return l
}

// acquire serves req from its lease, taking a new batch when it runs out.
func (t *leaseTable) acquire(ctx context.Context, p *plan, req *flow.TokenRequest) (flow.TokenResult, error) {
	s := t.s
	l := t.lockLive(p, req.Key)
	if l == nil { // table full: decide in Redis
		return t.acquireInRedis(ctx, p, req)
	}
	defer l.mu.Unlock()
	n := req.Tokens
	now := s.now()
	if now < l.refUnt {
		s.st.leaseLocal.Add(1)
		res := l.refused
		res.RetryAfter = time.Duration(l.refUnt - now)
		return res, nil
	}
	if now >= l.until && l.left > 0 { // expired before the sweep saw it
		l.size = max(1, l.taken-l.left)
		t.returnLocked(ctx, p, req.Key, l)
	}
	if l.left >= n && now < l.until {
		l.left -= n
		s.st.leaseLocal.Add(1)
		return flow.TokenResult{Allowed: true, Refused: -1, Remaining: float64(l.left), At: l.at}, nil
	}
	// A new batch. Size it from demand: one that ran out early doubles.
	if now < l.until {
		l.size = min(t.cf.MaxBatch, 2*l.size)
	}
	if l.left > 0 { // fewer than n left: give them back, take a batch
		t.returnLocked(ctx, p, req.Key, l)
	}
	return t.takeBatchLocked(ctx, p, req, l, now)
}

// lockLive returns key's lease locked, or nil when the table is full. A
// lease the sweep removed while we waited for its lock has given its
// permits back, so we look again and use the one that replaced it.
func (t *leaseTable) lockLive(p *plan, key string) *lease {
	for {
		l := t.get(p, key)
		if l == nil {
			return nil
		}
		l.mu.Lock()
		if !l.dead {
			return l
		}
		l.mu.Unlock()
	}
}

// acquireInRedis decides req in Redis without a lease.
func (t *leaseTable) acquireInRedis(ctx context.Context, p *plan, req *flow.TokenRequest) (flow.TokenResult, error) {
	var nonce any = ""
	if p.nonce {
		nonce = t.s.newNonce()
	}
	r, err := t.s.call(ctx, mainAcquire, p, req.Key, nonce, req.Tokens, 6, nil)
	if err != nil {
		return flow.TokenResult{}, err
	}
	return flow.TokenResult{Allowed: r.allowed, Refused: r.refused, Remaining: float64(r.remaining), RetryAfter: r.retryAfter(), At: r.at}, nil
}

// takeBatchLocked takes a batch of max(l.size, req.Tokens) permits into l,
// whose lock the caller holds and which holds no permits, and serves req
// from it. A refusal is kept in l and repeated locally for up to Period.
func (t *leaseTable) takeBatchLocked(ctx context.Context, p *plan, req *flow.TokenRequest, l *lease, now int64) (flow.TokenResult, error) {
	n := req.Tokens
	nonce := ""
	if p.nonce {
		nonce = t.s.newNonce()
	}
	r, err := t.s.call(ctx, mainLease, p, req.Key, nonce, max(l.size, n), 8, nil)
	if err != nil {
		return flow.TokenResult{}, err
	}
	t.s.st.leaseFetches.Add(1)
	if !r.allowed {
		res := flow.TokenResult{Refused: r.refused, Remaining: float64(r.remaining), RetryAfter: r.retry}
		wait := t.cf.Period
		if r.retry > 0 && r.retry < wait {
			wait = r.retry
		}
		l.refused, l.refUnt = res, now+int64(wait)
		return res, nil
	}
	l.left, l.taken, l.nonce, l.at = int(r.granted), int(r.granted), nonce, r.at
	period := t.cf.Period
	if r.reset >= 0 && r.reset < period {
		period = r.reset
	}
	l.until = now + int64(period)
	if l.left < n { // the rules could not give n at once: what they gave waits in the lease
		return flow.TokenResult{Refused: 0, Remaining: float64(l.left), RetryAfter: time.Millisecond}, nil
	}
	l.left -= n
	return flow.TokenResult{Allowed: true, Refused: -1, Remaining: float64(r.remaining) + float64(l.left), At: l.at}, nil
}

// giveBack returns permits of a call a later level refused to its lease,
// and reports false when there is no live lease to take them (the call
// was decided in Redis: give them back there).
func (t *leaseTable) giveBack(p *plan, key string, n int) bool {
	l := t.find(leaseKey{p, key})
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead || t.s.now() >= l.until {
		return false
	}
	l.left += n
	return true
}

// returnLocked gives a batch's unspent permits back to Redis; l.mu held.
// A batch that expired with permits left was too big: the next one asks
// for what this one used.
func (t *leaseTable) returnLocked(ctx context.Context, p *plan, key string, l *lease) {
	if l.left <= 0 {
		return
	}
	s := t.s
	// "<permits>@<us>": release.lua refunds the sub-window they were counted in.
	back := strconv.Itoa(l.left) + "@" + strconv.FormatInt(l.at, 10)
	if _, err := s.call(ctx, mainRelease, p, key, l.nonce, back, 0, nil); err != nil {
		s.logWarn("cluster: returning leased permits", err)
	} else {
		s.st.leaseReturned.Add(uint64(l.left))
	}
	l.left = 0
}

// sweep returns the unspent permits of expired batches (all of them when
// closing) and forgets entries idle for a period, so the table stays
// small; an entry in use keeps its batch size. The Redis calls are made
// outside the table lock: a sweep never holds up other keys.
func (t *leaseTable) sweep(all bool) {
	now := t.s.now()
	type item struct {
		k    leaseKey
		l    *lease
		drop bool
	}
	var items []item
	// Scan under the read lock: calls on existing keys go on meanwhile;
	// only the deletions take the write lock, briefly.
	t.mu.RLock()
	budget := len(t.m)
	if !all {
		// A tick looks at a bounded number of entries, so a table of many
		// cold keys never stalls the calls; map order is random, so every
		// entry comes up within a few ticks.
		budget = min(budget, sweepBudget)
	}
	for k, l := range t.m {
		if budget--; budget < 0 {
			break
		}
		l.mu.Lock()
		idle := now >= l.until+int64(t.cf.Period) && now >= l.refUnt
		if all || idle {
			items = append(items, item{k, l, true})
		} else if now >= l.until && l.left > 0 {
			items = append(items, item{k, l, false})
		}
		l.mu.Unlock()
	}
	t.mu.RUnlock()
	if len(items) > 0 {
		t.mu.Lock()
		for _, it := range items {
			if it.drop && t.m[it.k] == it.l {
				delete(t.m, it.k)
			}
		}
		t.mu.Unlock()
	}
	for _, it := range items {
		l := it.l
		l.mu.Lock()
		if l.left > 0 && (it.drop || now >= l.until) {
			used := l.taken - l.left
			ctx, cancel := context.WithTimeout(context.Background(), max(10*t.s.cf.Timeout, 200*time.Millisecond))
			t.returnLocked(ctx, it.k.p, it.k.key, l)
			cancel()
			l.size = max(1, used) // it was too big: ask for what was used
		}
		l.dead = l.dead || it.drop
		l.mu.Unlock()
	}
}
