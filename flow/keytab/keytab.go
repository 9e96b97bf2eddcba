package keytab

import (
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"time"
)

// Table holds one value of type V per key, for at most MaxKeys keys,
// forgetting keys idle longer than its IdleTTL. It is safe for concurrent
// use. Time is an argument (nanoseconds on any monotonic clock), so the
// table reads no clock and starts no goroutine.
//
// A key's seeded hash (hash/maphash, a seed per table) picks one of up to
// maxShards shards, each a mutex and two tables of entries that hold their
// key (a short key's bytes in the entry, a long one as a Go map's key): a
// key is found by comparing it with the entry's key, never by its hash
// alone, so two keys never share a value however their hashes fall (see
// shard). Each shard holds at most its share of MaxKeys (the shares sum
// to MaxKeys exactly).
//
// When a full shard must admit a new key it samples up to evictSamples of
// its entries (from a random place on), drops those
// idle past the TTL and, when none is, the least recently used of the
// sample: an approximate LRU, as Redis' allkeys-lru, exact when a shard
// holds no more than evictSamples keys. Idle keys are forgotten lazily: a
// key found idle past the TTL starts afresh, and a shard that admits a
// key first sweeps out all its idle keys when it has not done so for a
// sweepDiv-th of the TTL.
//
// Every key's value lives in an entry of its own, allocated when the key
// is admitted and never given to another key. A key evicted or forgotten
// comes back with a new entry; a caller that still holds the old one
// (Get's pointer) keeps using it alone, and nothing it does there reaches
// the key's new value.
type Table[V any] struct {
	shards     []shard[V]
	mask       uint64 // len(shards)-1, a power of two less one
	seed       maphash.Seed
	ttl        int64 // ns; math.MaxInt64 when keys never idle out
	sweepEvery int64 // ns

	// hash, when set, replaces maphash (tests force keys onto few hashes
	// with it).
	hash func(string) uint64
}

const (
	evictSamples = 5
	maxShards    = 64
	keysPerShard = 1024 // below this many keys per shard, use fewer shards
	sweepDiv     = 4
)

// shard is one mutex and the tables it guards. A key of at most inlineKey
// bytes has its entry in byHash (see index) under the key's hash; a
// longer key, or a short one whose hash another short key held when it
// was admitted (a 64-bit collision: all but never by chance, and one
// aimed at without the seed costs the key a second lookup, never its own
// value), or one admitted when byHash held maxNums keys, has it in spill,
// a Go map by the key itself. A lookup compares
// the key either way: with the entry's own bytes for byHash, by the map
// in spill. byHash rather than a Go map: its slots are 4 bytes, not 16 or
// 24, the hash the shard was picked by is reused, and the compare reads
// the entry the call reads anyway, so a lookup among millions of keys
// reads less memory that no cache holds.
//
// A shard is 128 bytes (TestShardSize), so that in the shards' slice
// (whose size is a power of two times 128, which the allocator places on
// a 128-byte boundary) two shards' locks never share a cache line and
// calls for keys of different shards do not contend through it.
type shard[V any] struct {
	mu        sync.Mutex
	byHash    index[V]
	spill     map[string]*entry[V] // nil until a long key, a collision or a full byHash
	capacity  int
	lastSweep int64
	_         [8]byte
}

// inlineKey is the longest key an entry holds in its own bytes. With the
// flow engine's value for a token-bucket rule (the bucket and a
// generation, 56 bytes) an entry is then 128 bytes, a size the allocator
// places on a 128-byte boundary: two neighbouring cache lines. Keys up to
// 55 bytes take in client IPs of either family, UUIDs and most user ids.
const inlineKey = 55

// longKey marks an entry whose key is longer than inlineKey: its bytes
// are spill's map key only.
const longKey = math.MaxUint8

// entry is one key's value and when the key was last used (Get), in ns,
// with the key's bytes when it is short.
type entry[V any] struct {
	val  V
	last int64
	h    uint64 // the key's hash, when the entry is in byHash
	n    uint8  // the key's length, or longKey
	buf  [inlineKey]byte
}

// holds reports whether e, an entry of byHash, is key's.
func (e *entry[V]) holds(key string) bool {
	n := int(e.n)
	return n <= inlineKey && n == len(key) && string(e.buf[:n]) == key
}

// New returns a table of at most maxKeys keys (none when maxKeys <= 0:
// then Get hands each call a fresh value of its own) forgetting keys idle
// longer than idleTTL (never, when idleTTL <= 0).
func New[V any](maxKeys int, idleTTL time.Duration) *Table[V] {
	maxKeys = max(maxKeys, 0)
	n := 1
	for n < maxShards && n*2*keysPerShard <= maxKeys {
		n *= 2
	}
	t := &Table[V]{shards: make([]shard[V], n), mask: uint64(n - 1), seed: maphash.MakeSeed(), ttl: int64(idleTTL)}
	if idleTTL <= 0 {
		t.ttl = math.MaxInt64
	}
	t.sweepEvery = t.ttl / sweepDiv
	for i := range t.shards {
		s := &t.shards[i]
		s.capacity = maxKeys / n
		if i < maxKeys%n {
			s.capacity++
		}
	}
	return t
}

func (t *Table[V]) hashOf(key string) uint64 {
	if t.hash != nil {
		return t.hash(key)
	}
	return maphash.String(t.seed, key)
}

// find returns key's entry, idle or not, or nil.
func (s *shard[V]) find(h uint64, key string) *entry[V] {
	if len(key) <= inlineKey {
		if e := s.byHash.get(h); e != nil && e.holds(key) {
			return e
		}
	}
	if len(s.spill) > 0 {
		return s.spill[key]
	}
	return nil
}

// put stores e for key, which hashes to h and is not held.
func (s *shard[V]) put(h uint64, key string, e *entry[V]) {
	e.n = longKey
	if len(key) <= inlineKey {
		e.n = uint8(copy(e.buf[:], key))
		if s.byHash.get(h) == nil && s.byHash.add(h, e) {
			return
		}
	}
	if s.spill == nil {
		s.spill = make(map[string]*entry[V])
	}
	// The table keeps a copy of the key: the caller's string may share
	// memory with a larger one (a request header) that the table would
	// otherwise keep alive.
	s.spill[strings.Clone(key)] = e
}

// replace puts e in the place of old, key's entry (key hashes to h).
func (s *shard[V]) replace(h uint64, key string, old, e *entry[V]) {
	e.n, e.buf = old.n, old.buf
	if s.byHash.get(h) == old {
		s.byHash.replace(h, e)
	} else {
		s.spill[strings.Clone(key)] = e // as put: not the caller's string
	}
}

// remove drops e, key's entry (key hashes to h). An entry of byHash is
// found by h alone, so key may then be "".
func (s *shard[V]) remove(h uint64, key string, e *entry[V]) {
	if s.byHash.get(h) == e {
		s.byHash.delete(h)
	} else {
		delete(s.spill, key)
	}
}

func (s *shard[V]) len() int { return s.byHash.n + len(s.spill) }

// idle reports whether an entry last used at last is idle past the TTL at now.
func (t *Table[V]) idle(last, now int64) bool { return now-last > t.ttl }

// Get returns key's value at now and marks the key used. A key not held,
// or idle past the TTL, gets a new entry whose value init fills in (under
// the shard's lock: init must be quick and must not use the table); when
// init fails the key is not admitted and Get returns its error. A table of
// no keys calls init for a value it does not keep.
func (t *Table[V]) Get(key string, now int64, init func(*V) error) (*V, error) {
	h := t.hashOf(key)
	s := &t.shards[h&t.mask]
	s.mu.Lock()
	e := s.find(h, key)
	if e != nil && !t.idle(e.last, now) {
		if now > e.last {
			e.last = now
		}
		s.mu.Unlock()
		return &e.val, nil
	}
	v, err := t.add(s, h, key, e, now, init)
	s.mu.Unlock()
	return v, err
}

// add is Get for a key not held (old nil) or idle past the TTL (old its
// entry), with s locked.
func (t *Table[V]) add(s *shard[V], h uint64, key string, old *entry[V], now int64, init func(*V) error) (*V, error) {
	e := &entry[V]{last: now}
	if err := init(&e.val); err != nil {
		return nil, err
	}
	if s.capacity == 0 {
		return &e.val, nil
	}
	if old != nil {
		s.replace(h, key, old, e)
		return &e.val, nil
	}
	if now-s.lastSweep >= t.sweepEvery {
		s.lastSweep = now
		t.sweep(s, now)
	}
	if s.len() >= s.capacity {
		t.evict(s, now)
	}
	s.put(h, key, e)
	return &e.val, nil
}

// sweep forgets every key of s idle past the TTL; s is locked.
func (t *Table[V]) sweep(s *shard[V], now int64) {
	s.byHash.sweep(func(e *entry[V]) bool { return t.idle(e.last, now) })
	for k, e := range s.spill {
		if t.idle(e.last, now) {
			delete(s.spill, k)
		}
	}
}

// evict makes room for one key in s, which is full and locked: see Table.
// The sample comes from byHash, and from spill when byHash has too few.
func (t *Table[V]) evict(s *shard[V], now int64) {
	type victim struct {
		h uint64
		k string // spill's entries: the key ("" for byHash's, see remove)
		e *entry[V]
	}
	var sample [evictSamples]victim
	n := 0
	s.byHash.sample(func(h uint64, e *entry[V]) bool {
		sample[n] = victim{h: h, e: e}
		n++
		return n < evictSamples
	})
	for k, e := range s.spill {
		if n == evictSamples {
			break
		}
		// h 0: byHash holds no entry of spill, whatever its hash.
		sample[n] = victim{k: k, e: e}
		n++
	}
	var oldest *victim
	dropped := false
	for i := range sample[:n] {
		v := &sample[i]
		if t.idle(v.e.last, now) {
			s.remove(v.h, v.k, v.e)
			dropped = true
		} else if oldest == nil || v.e.last < oldest.e.last {
			oldest = v
		}
	}
	if !dropped && oldest != nil {
		s.remove(oldest.h, oldest.k, oldest.e)
	}
}

// Peek returns key's value when the key is held and not idle past the TTL
// at now, else nil; it neither admits the key nor marks it used.
func (t *Table[V]) Peek(key string, now int64) *V {
	h := t.hashOf(key)
	s := &t.shards[h&t.mask]
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.find(h, key); e != nil && !t.idle(e.last, now) {
		return &e.val
	}
	return nil
}

// Forget drops key and reports whether it was held (idle or not).
func (t *Table[V]) Forget(key string) bool {
	h := t.hashOf(key)
	s := &t.shards[h&t.mask]
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.find(h, key)
	if e != nil {
		s.remove(h, key, e)
	}
	return e != nil
}

// Len is the number of keys held, idle ones not yet forgotten included
// (locking each shard in turn, briefly).
func (t *Table[V]) Len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += s.len()
		s.mu.Unlock()
	}
	return n
}

// SweepAll forgets every key idle past the TTL at now.
func (t *Table[V]) SweepAll(now int64) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		s.lastSweep = now
		t.sweep(s, now)
		s.mu.Unlock()
	}
}

// Each calls fn with the value of every key held, one shard locked at a
// time: fn must be quick and must not use the table. It passes no key: a
// short key would be a string made for the call (a value that needs its
// key can hold it).
func (t *Table[V]) Each(fn func(v *V)) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for _, e := range s.byHash.ptrs {
			if e != nil {
				fn(&e.val)
			}
		}
		for _, e := range s.spill {
			fn(&e.val)
		}
		s.mu.Unlock()
	}
}
