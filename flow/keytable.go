package flow

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/flowgate/flowgate/flow/internal/algo"
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
// above the live clients and the longest call to avoid it. A token bucket
// lives in its key's record, which goes to another key after an eviction:
// a call that took the evicted key's bucket just before may take its
// permit from that key's (keyRecords).
//
// Memory: a key is tracked by its 64-bit seeded hash, not its string (two
// keys sharing a limiter needs a 64-bit collision: about 3e-10 for 100 000
// keys; the seed is random per table, and hotpath.StrHasher says how far
// that keeps collisions from being aimed at), in a record of 32 bytes (128
// with a token bucket: keyRecords) and an index slot of 4: last use and
// limit generation are 32-bit.
type keyTable struct {
	recs       *keyRecords // the entries of all shards
	shards     []keyShard
	mask       uint64
	hash       hotpath.StrHasher
	ttl        int64       // ticks
	sweepEvery int64       // ns
	far        atomic.Bool // the index has outgrown farIndex: prefetch slots
}

// farIndex is the index size past which a slot is likely not in a core's
// own caches while calls stream through their keys' records, so prefetch
// pays for itself: 256 KiB, half the 512 KiB L2 of a core of the machine
// first measured on (a quarter of the 1 MiB of a later one). Not tuned:
// the sizes measured are 8 KiB (1 000 users, off), 512 KiB to 1 MiB and
// 8 MiB (100 000 and 1 000 000, on; bench/README.md "Cost growth").
const farIndex = 256 << 10

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

// keyedBucket is a key's entry and its token bucket side by side, so a
// call reaches the bucket through the entry without a second cache miss (a
// key's line is cold when thousands of keys take turns): the front of a
// keyRecBucket, which adds the key's hash (128 B in all).
type keyedBucket struct {
	keyEntry
	tb algo.Bucket
}

// tickShift turns nanoseconds into ticks of 2^20 ns (~1.05 ms): 32-bit ages
// then span 26 days, the longest IdleTTL honoured (longer ones are clamped).
const tickShift = 20

func tick(now int64) uint32 { return uint32(now >> tickShift) }

// age is how many ticks ago last was, correct across the 32-bit wrap.
func age(nowTick, last uint32) int64 { return int64(int32(nowTick - last)) }

// newKeyTable tracks up to maxKeys keys; bucket says the rule's limiters
// are token buckets, which the key records then hold in place.
func newKeyTable(maxKeys int, ttl int64, bucket bool) *keyTable {
	maxKeys = min(maxKeys, MaxKeysLimit) // validation refuses more
	n := 1
	for n < maxShards && n*2*keysPerShard <= maxKeys {
		n *= 2
	}
	t := &keyTable{recs: newKeyRecords(maxKeys, bucket), shards: make([]keyShard, n), mask: uint64(n - 1), hash: hotpath.NewStrHasher()}
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
	en := s.m.get(t.recs, h)
	if en != nil && age(nt, en.last) <= t.ttl {
		if g := uint32(cr.gen.Load()); en.gen != g {
			en.lim.SetLimit(now, cr.limit())
			en.gen = g
		}
		if age(nt, en.last) > 0 {
			en.last = nt
		}
		lim := en.lim
		s.mu.Unlock()
		return lim, nil
	}
	return t.add(cr, s, h, en, now, nt)
}

// add is get for a key it did not find (en nil) or found idle past the
// TTL, with s locked (add unlocks it): apart from get, so that get's own
// path, the one nearly every call takes, keeps its values in registers.
func (t *keyTable) add(cr *compiledRule, s *keyShard, h uint64, en *keyEntry, now int64, nt uint32) (limiter, error) {
	g := uint32(cr.gen.Load())
	if en != nil { // idle past the TTL: forgotten, starts afresh
		if err := cr.initKey(en, t.recs.bucketOf(en), now, nt, g); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		lim := en.lim
		s.mu.Unlock()
		return lim, nil
	}
	if s.capacity == 0 { // tracks nothing: the call gets a limiter of its own
		s.mu.Unlock()
		return cr.newLimiter(now)
	}
	if now-s.lastSweep >= t.sweepEvery {
		s.lastSweep = now
		s.sweep(t.recs, nt, t.ttl)
	}
	if int(s.m.n) >= s.capacity {
		s.evict(t.recs, h, nt, t.ttl)
	}
	en, grew := s.m.add(t.recs, h)
	if err := cr.initKey(en, t.recs.bucketOf(en), now, nt, g); err != nil {
		s.m.del(t.recs, h)
		s.mu.Unlock()
		return nil, err
	}
	if grew {
		s.hint.Store(&keyHint{slots: s.m.slots, shift: s.m.shift})
		if len(s.m.slots)*len(t.shards)*int(unsafe.Sizeof(uint32(0))) >= farIndex {
			t.far.Store(true)
		}
	}
	lim := en.lim
	s.mu.Unlock()
	return lim, nil
}

func (s *keyShard) sweep(r *keyRecords, nt uint32, ttl int64) {
	s.m.sweep(r, func(en *keyEntry) bool { return age(nt, en.last) > ttl })
}

// evict makes room for one key, the new key hashing to h; see keyTable.
// The sample starts where h's own slot would be: the hash is seeded and
// random per key, as the place Go's map iteration started at was.
func (s *keyShard) evict(r *keyRecords, h uint64, nt uint32, ttl int64) {
	var idle [evictSamples]uint64
	nIdle := 0
	var oldKey uint64
	oldest, found := int64(math.MinInt64), false
	s.m.sample(r, h>>s.m.shift, evictSamples, func(k uint64, en *keyEntry) bool {
		if a := age(nt, en.last); a > ttl {
			idle[nIdle] = k
			nIdle++
		} else if !found || a > oldest {
			oldKey, oldest, found = k, a, true
		}
		return true
	})
	for _, k := range idle[:nIdle] {
		s.m.del(r, k)
	}
	if int(s.m.n) >= s.capacity && found {
		s.m.del(r, oldKey)
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
		s.sweep(t.recs, tick(now), t.ttl)
		s.mu.Unlock()
	}
}

// each calls fn with every tracked key's limiter, one shard locked at a
// time (for snapshots: fn must be quick).
func (t *keyTable) each(fn func(limiter)) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.m.each(t.recs, func(en *keyEntry) { fn(en.lim) })
		s.mu.Unlock()
	}
}
