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
// The keys are split over up to maxShards shards by a hash of the key
// (hash/maphash, seeded per table), each a mutex and a Go map from the key
// itself to its entry: the hash only picks a shard, and a key is found by
// comparing keys, so two keys never share a value however their hashes
// fall. Each shard holds at most its share of MaxKeys (the shares sum to
// MaxKeys exactly).
//
// When a full shard must admit a new key it samples up to evictSamples of
// its entries (a Go map's iteration starts at a random place), drops those
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

	// hash, when set, replaces maphash as the shard picker (tests force
	// every key onto one hash with it).
	hash func(string) uint64
}

const (
	evictSamples = 5
	maxShards    = 64
	keysPerShard = 1024 // below this many keys per shard, use fewer shards
	sweepDiv     = 4
)

// shard is one mutex and the map it guards. The padding makes a shard 64
// bytes, so that in the shards' slice (whose size is a power of two times
// 64, which the allocator places on a 64-byte boundary) two shards' locks
// never share a cache line and calls for keys of different shards do not
// contend through it.
type shard[V any] struct {
	mu        sync.Mutex
	m         map[string]*entry[V]
	capacity  int
	lastSweep int64
	_         [32]byte
}

// entry is one key's value and when it was last used (Get), in ns.
type entry[V any] struct {
	val  V
	last int64
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
		s.m = make(map[string]*entry[V])
	}
	return t
}

func (t *Table[V]) shardOf(key string) *shard[V] {
	if t.mask == 0 {
		return &t.shards[0]
	}
	var h uint64
	if t.hash != nil {
		h = t.hash(key)
	} else {
		h = maphash.String(t.seed, key)
	}
	return &t.shards[h&t.mask]
}

// idle reports whether an entry last used at last is idle past the TTL at now.
func (t *Table[V]) idle(last, now int64) bool { return now-last > t.ttl }

// Get returns key's value at now and marks the key used. A key not held,
// or idle past the TTL, gets a new entry whose value init fills in (under
// the shard's lock: init must be quick and must not use the table); when
// init fails the key is not admitted and Get returns its error. A table of
// no keys calls init for a value it does not keep.
func (t *Table[V]) Get(key string, now int64, init func(*V) error) (*V, error) {
	s := t.shardOf(key)
	s.mu.Lock()
	if e := s.m[key]; e != nil && !t.idle(e.last, now) {
		if now > e.last {
			e.last = now
		}
		s.mu.Unlock()
		return &e.val, nil
	}
	v, err := t.add(s, key, now, init)
	s.mu.Unlock()
	return v, err
}

// add is Get for a key not held or idle past the TTL, with s locked.
func (t *Table[V]) add(s *shard[V], key string, now int64, init func(*V) error) (*V, error) {
	e := &entry[V]{last: now}
	if err := init(&e.val); err != nil {
		return nil, err
	}
	if s.capacity == 0 {
		return &e.val, nil
	}
	if _, held := s.m[key]; held { // idle: its new entry takes its place
		s.m[key] = e
		return &e.val, nil
	}
	if now-s.lastSweep >= t.sweepEvery {
		s.lastSweep = now
		t.sweep(s, now)
	}
	if len(s.m) >= s.capacity {
		t.evict(s, now)
	}
	// The table keeps a copy of the key: the caller's string may share
	// memory with a larger one (a request header) that the table would
	// otherwise keep alive.
	s.m[strings.Clone(key)] = e
	return &e.val, nil
}

// sweep forgets every key of s idle past the TTL; s is locked.
func (t *Table[V]) sweep(s *shard[V], now int64) {
	for k, e := range s.m {
		if t.idle(e.last, now) {
			delete(s.m, k)
		}
	}
}

// evict makes room for one key in s, which is full and locked: see Table.
func (t *Table[V]) evict(s *shard[V], now int64) {
	var idle [evictSamples]string
	nIdle, seen := 0, 0
	var oldest *entry[V]
	var oldKey string
	for k, e := range s.m {
		if t.idle(e.last, now) {
			idle[nIdle] = k
			nIdle++
		} else if oldest == nil || e.last < oldest.last {
			oldKey, oldest = k, e
		}
		if seen++; seen == evictSamples {
			break
		}
	}
	for _, k := range idle[:nIdle] {
		delete(s.m, k)
	}
	if nIdle == 0 && oldest != nil {
		delete(s.m, oldKey)
	}
}

// Peek returns key's value when the key is held and not idle past the TTL
// at now, else nil; it neither admits the key nor marks it used.
func (t *Table[V]) Peek(key string, now int64) *V {
	s := t.shardOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[key]; e != nil && !t.idle(e.last, now) {
		return &e.val
	}
	return nil
}

// Forget drops key and reports whether it was held (idle or not).
func (t *Table[V]) Forget(key string) bool {
	s := t.shardOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, held := s.m[key]
	delete(s.m, key)
	return held
}

// Len is the number of keys held, idle ones not yet forgotten included
// (locking each shard in turn, briefly).
func (t *Table[V]) Len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
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

// Each calls fn with every key held and its value, one shard locked at a
// time: fn must be quick and must not use the table.
func (t *Table[V]) Each(fn func(key string, v *V)) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for k, e := range s.m {
			fn(k, &e.val)
		}
		s.mu.Unlock()
	}
}
