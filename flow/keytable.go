package flow

import (
	"hash/maphash"
	"math"
	"strings"
	"sync"
)

// keyTable holds one limiter per user or IP for one rule, bounded by MaxKeys
// and forgetting keys idle longer than IdleTTL.
//
// It is sharded by a hash of the key, each shard a mutex-guarded map, so
// calls for different keys rarely contend. Each shard holds at most its
// share of MaxKeys (the shares sum to MaxKeys exactly). When a full shard
// must admit a new key it samples up to evictSamples entries (Go's map
// iteration starts at a random place), drops any that are idle past the TTL
// and otherwise the least recently used of the sample: an approximate LRU, as
// Redis' allkeys-lru, exact when a shard holds no more than evictSamples keys.
// Idle keys are forgotten lazily, with no goroutine: a key found idle past
// the TTL starts afresh, and a shard that admits a key sweeps out all its
// idle keys at most every sweepDiv-th of the TTL.
type keyTable struct {
	shards     []keyShard
	mask       uint64
	seed       maphash.Seed
	ttl        int64
	sweepEvery int64
}

const (
	evictSamples = 5
	maxShards    = 64
	keysPerShard = 1024 // below this many keys per shard, use fewer shards
	sweepDiv     = 4
)

type keyShard struct {
	mu        sync.Mutex
	m         map[string]*keyEntry
	capacity  int
	lastSweep int64
	_         [24]byte // keep hot shard locks on separate cache lines
}

// keyEntry is one tracked key: its limiter, when it was last used, and the
// limit generation the limiter was last set to (see compiledRule.gen).
// Guarded by the shard's mutex.
type keyEntry struct {
	lim  limiter
	last int64
	gen  uint64
}

func newKeyTable(maxKeys int, ttl int64) *keyTable {
	n := 1
	for n < maxShards && n*2*keysPerShard <= maxKeys {
		n *= 2
	}
	t := &keyTable{shards: make([]keyShard, n), mask: uint64(n - 1), seed: maphash.MakeSeed(), ttl: ttl}
	if t.ttl <= 0 {
		t.ttl = math.MaxInt64
	}
	t.sweepEvery = t.ttl / sweepDiv
	for i := range t.shards {
		c := maxKeys / n
		if i < maxKeys%n {
			c++
		}
		t.shards[i].capacity = c
		t.shards[i].m = make(map[string]*keyEntry)
	}
	return t
}

// get returns key's limiter at now, creating it (and making room) when the
// key is new or was idle past the TTL, and applying a changed limit.
func (t *keyTable) get(cr *compiledRule, key string, now int64) (limiter, error) {
	s := &t.shards[maphash.String(t.seed, key)&t.mask]
	s.mu.Lock()
	en := s.m[key]
	if en != nil && now-en.last <= t.ttl {
		if g := cr.gen.Load(); en.gen != g {
			en.lim.setLimit(now, cr.limit())
			en.gen = g
		}
		if now > en.last {
			en.last = now
		}
		lim := en.lim
		s.mu.Unlock()
		return lim, nil
	}
	g := cr.gen.Load()
	lim, err := cr.newLimiter(now)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if en != nil { // idle past the TTL: forgotten, starts afresh
		en.lim, en.last, en.gen = lim, now, g
		s.mu.Unlock()
		return lim, nil
	}
	if now-s.lastSweep >= t.sweepEvery {
		s.sweep(now, t.ttl)
	}
	if len(s.m) >= s.capacity {
		s.evict(now, t.ttl)
	}
	if s.capacity > 0 {
		// Clone: the table outlives the call, the caller's string need not.
		s.m[strings.Clone(key)] = &keyEntry{lim: lim, last: now, gen: g}
	}
	s.mu.Unlock()
	return lim, nil
}

func (s *keyShard) sweep(now, ttl int64) {
	s.lastSweep = now
	for k, en := range s.m {
		if now-en.last > ttl {
			delete(s.m, k)
		}
	}
}

// evict makes room for one key; see keyTable.
func (s *keyShard) evict(now, ttl int64) {
	var oldKey string
	oldest, seen, found := int64(math.MaxInt64), 0, false
	for k, en := range s.m {
		if now-en.last > ttl {
			delete(s.m, k)
		} else if !found || en.last < oldest {
			oldKey, oldest, found = k, en.last, true
		}
		if seen++; seen >= evictSamples {
			break
		}
	}
	if len(s.m) >= s.capacity && found {
		delete(s.m, oldKey)
	}
}

// len counts the tracked keys (locking each shard in turn, briefly).
func (t *keyTable) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// sweepAll forgets every key idle past the TTL now.
func (t *keyTable) sweepAll(now int64) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.sweep(now, t.ttl)
		s.mu.Unlock()
	}
}
