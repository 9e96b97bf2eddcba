package flow

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/flowgate/flowgate/internal/hotpath"
)

// keyTable holds one limiter per user or IP for one rule, bounded by MaxKeys
// and forgetting keys idle longer than IdleTTL.
//
// It is sharded by a hash of the key, each shard a mutex-guarded index
// (keyMap, an open-addressed table), so calls for different keys rarely
// contend. Each shard holds at most its
// share of MaxKeys (the shares sum to MaxKeys exactly). When a full shard
// must admit a new key it samples up to evictSamples entries (from a
// place the new key's seeded hash picks), drops any that are idle past the TTL
// and otherwise the least recently used of the sample: an approximate LRU, as
// Redis' allkeys-lru, exact when a shard holds no more than evictSamples keys.
// Idle keys are forgotten lazily, with no goroutine: a key found idle past
// the TTL starts afresh, and a shard that admits a key sweeps out all its
// idle keys at most every sweepDiv-th of the TTL.
//
// A key evicted or forgotten while it has concurrency permits in flight
// starts afresh when it comes back: its new limiter does not see the
// permits still held (they are released into the old one), so for that
// moment the key can exceed its concurrency cap. Size MaxKeys and IdleTTL
// above the live clients and the longest call to avoid it.
//
// Memory: a key is tracked by its 64-bit seeded hash, not its string (two
// keys sharing a limiter needs a 64-bit collision: about 3e-10 for 100 000
// keys; the seed is random per table, and hotpath.StrHasher says how far
// that keeps collisions from being aimed at), and an
// entry is 24 bytes: last use and limit generation are 32-bit.
type keyTable struct {
	shards     []keyShard
	mask       uint64
	hash       hotpath.StrHasher
	ttl        int64       // ticks
	sweepEvery int64       // ns
	far        atomic.Bool // the index has outgrown farIndex: prefetch slots
}

// farIndex is the index size past which a slot is likely not in a core's
// own caches (1 MiB: twice the 512 KiB L2 per core of the machine first
// measured on, all of a 1 MiB L2 on a later one), so prefetch pays for itself. Not tuned: the sizes measured are
// 32 KiB (1 000 users, off), 4 MiB and 32 MiB (100 000 and 1 000 000, on;
// both faster, bench/README.md "Cost growth").
const farIndex = 1 << 20

const (
	evictSamples = 5
	maxShards    = 64
	keysPerShard = 1024 // below this many keys per shard, use fewer shards
	sweepDiv     = 4
)

type keyShard struct {
	mu        sync.Mutex
	m         keyMap
	capacity  int
	lastSweep int64
	hint      atomic.Pointer[keyHint] // m's slots, for prefetch without the lock
	// 64 B, one hotpath.CacheLine: hot shard locks apart (TestShardSize)
}

// keyEntry is one tracked key: its limiter, when it was last used (in
// tick units, modulo 2^32), and the limit generation (modulo 2^32) the
// limiter was last set to (see compiledRule.gen). Guarded by the shard's mutex.
type keyEntry struct {
	lim  limiter
	last uint32
	gen  uint32
}

// keyedBucket is a key's entry and its token bucket in one allocation, so
// a call reaches the bucket through the entry without a second cache miss
// (the key table's entries are spread over the heap; a key's line is cold
// when thousands of keys take turns). 120 B: the 128-byte size class, as
// the 32 B entry and 96 B bucket allocated apart were. A bucket that
// replaces it (idle past the TTL) is allocated on its own.
type keyedBucket struct {
	keyEntry
	tb tokenBucket
}

// tickShift turns nanoseconds into ticks of 2^20 ns (~1.05 ms): 32-bit ages
// then span 26 days, the longest IdleTTL honoured (longer ones are clamped).
const tickShift = 20

func tick(now int64) uint32 { return uint32(now >> tickShift) }

// age is how many ticks ago last was, correct across the 32-bit wrap.
func age(nowTick, last uint32) int64 { return int64(int32(nowTick - last)) }

func newKeyTable(maxKeys int, ttl int64) *keyTable {
	n := 1
	for n < maxShards && n*2*keysPerShard <= maxKeys {
		n *= 2
	}
	t := &keyTable{shards: make([]keyShard, n), mask: uint64(n - 1), hash: hotpath.NewStrHasher()}
	t.ttl = ttl >> tickShift
	if ttl <= 0 || t.ttl > math.MaxInt32 {
		t.ttl = math.MaxInt32
	}
	t.sweepEvery = t.ttl << tickShift / sweepDiv
	for i := range t.shards {
		c := maxKeys / n
		if i < maxKeys%n {
			c++
		}
		t.shards[i].capacity = c
		t.shards[i].m.limitTo(c)
	}
	return t
}

// prefetch starts loading key's index slot and returns without waiting
// for it, so that work the caller does before get (decidePlain reads the
// clock and takes the call's permit) runs while the line comes in. Worth
// it only once the index has outgrown farIndex (t.far, which the caller
// checks first): a read from a table of tens of megabytes costs a whole
// memory latency, which a call otherwise waits out (BenchmarkGrowthFloor);
// get hashes the key again, a few nanoseconds.
func (t *keyTable) prefetch(key string) {
	h := t.hash.String(key)
	// The shard's hint may be stale (the table grew since) or missing: a
	// prefetch of the old slots costs nothing but itself, and the hint
	// keeps them allocated.
	if kh := t.shards[h&t.mask].hint.Load(); kh != nil {
		hotpath.Prefetch(unsafe.Pointer(&kh.slots[live(h)>>kh.shift]))
	}
}

// get returns key's limiter at now, creating it (and making room) when the
// key is new or was idle past the TTL, and applying a changed limit.
func (t *keyTable) get(cr *compiledRule, key string, now int64) (limiter, error) {
	h := t.hash.String(key)
	s := &t.shards[h&t.mask]
	nt := tick(now)
	s.mu.Lock()
	en := s.m.get(h)
	if en != nil && age(nt, en.last) <= t.ttl {
		if g := uint32(cr.gen.Load()); en.gen != g {
			en.lim.setLimit(now, cr.limit())
			en.gen = g
		}
		if age(nt, en.last) > 0 {
			en.last = nt
		}
		lim := en.lim
		s.mu.Unlock()
		return lim, nil
	}
	g := uint32(cr.gen.Load())
	if en != nil { // idle past the TTL: forgotten, starts afresh
		lim, err := cr.newLimiter(now)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		en.lim, en.last, en.gen = lim, nt, g
		s.mu.Unlock()
		return lim, nil
	}
	ne, err := cr.newKeyEntry(now, nt, g)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if now-s.lastSweep >= t.sweepEvery {
		s.lastSweep = now
		s.sweep(nt, t.ttl)
	}
	if int(s.m.n) >= s.capacity {
		s.evict(h, nt, t.ttl)
	}
	if s.capacity > 0 {
		if s.m.put(h, ne) {
			s.hint.Store(&keyHint{slots: s.m.slots, shift: s.m.shift})
			if len(s.m.slots)*len(t.shards)*int(unsafe.Sizeof(keySlot{})) >= farIndex {
				t.far.Store(true)
			}
		}
	}
	s.mu.Unlock()
	return ne.lim, nil
}

func (s *keyShard) sweep(nt uint32, ttl int64) {
	s.m.sweep(func(en *keyEntry) bool { return age(nt, en.last) > ttl })
}

// evict makes room for one key, the new key hashing to h; see keyTable.
// The sample starts where h's own slot would be: the hash is seeded and
// random per key, as the place Go's map iteration started at was.
func (s *keyShard) evict(h uint64, nt uint32, ttl int64) {
	var idle [evictSamples]uint64
	nIdle := 0
	var oldKey uint64
	oldest, found := int64(math.MinInt64), false
	s.m.sample(h>>s.m.shift, evictSamples, func(k uint64, en *keyEntry) bool {
		if a := age(nt, en.last); a > ttl {
			idle[nIdle] = k
			nIdle++
		} else if !found || a > oldest {
			oldKey, oldest, found = k, a, true
		}
		return true
	})
	for _, k := range idle[:nIdle] {
		s.m.del(k)
	}
	if int(s.m.n) >= s.capacity && found {
		s.m.del(oldKey)
	}
}

// len counts the tracked keys (locking each shard in turn, briefly).
func (t *keyTable) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += int(s.m.n)
		s.mu.Unlock()
	}
	return n
}

// sweepAll forgets every key idle past the TTL now.
func (t *keyTable) sweepAll(now int64) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.lastSweep = now
		s.sweep(tick(now), t.ttl)
		s.mu.Unlock()
	}
}

// each calls fn with every tracked key's limiter, one shard locked at a
// time (for snapshots: fn must be quick).
func (t *keyTable) each(fn func(limiter)) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.m.each(func(en *keyEntry) { fn(en.lim) })
		s.mu.Unlock()
	}
}
