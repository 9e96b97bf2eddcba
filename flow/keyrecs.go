package flow

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/flowgate/flowgate/flow/internal/algo"
	"github.com/flowgate/flowgate/internal/hotpath"
)

// keyRecords holds a key table's entries for all its shards, each a
// record found by its number: the shards' indexes (keyMap) store numbers,
// 4 bytes a slot with a tag of the key's hash, instead of 16-byte hash and
// pointer pairs. At a million keys the index is then 8 MiB instead of 32,
// which a processor's shared cache keeps far more of while calls stream
// through their keys' entries (bench's GrowthFloorStream), and records
// handed out in the order keys arrive sit in one run of memory, which the
// hardware prefetcher follows when keys come back in that order (a
// record array per shard is 64 interleaved runs it cannot follow; bench
// README "Cost growth").
//
// A record is the entry and the key's full hash, which settles a tag
// match; for a token bucket rule, the bucket too, so a call still reaches
// its bucket without another cache miss (keyRecBucket, 128 B, as the heap
// allocation of entry and bucket was; keyRecPlain, 32 B, otherwise). Both
// start with the entry and end with the hash, so one accessor serves both.
//
// Records come in chunks of recChunk, allocated when first needed and
// never moved, through a directory sized from MaxKeys; numbers given back
// (a key evicted or swept) are handed out again before new ones, so the
// records in use never pass MaxKeys. A record given back may still be in
// use by a call that took its key's limiter just before: its entry is
// rewritten only under the new key's shard lock (calls hold the limiter,
// not the entry), and its bucket is not cloned over but restarted
// (algo.Bucket.RestartFrom), which writes only what calls read atomically;
// such a call may take its permits from the new key.
//
// Every lookup reads the fields before the pad; they never change, and sit
// on a line of their own (newKeyRecords), apart from what alloc and give
// write, so that cores looking up keys do not pass the line around.
type keyRecords struct {
	dir     []unsafe.Pointer
	size    uintptr // bytes a record
	chunk   int     // records a chunk: recChunk, or MaxKeys when fewer
	tagMask uint32  // the slot bits that hold the tag; the rest, number+1
	bucket  bool    // records are keyRecBucket
	_       [hotpath.CacheLine - 48]byte
	mu      sync.Mutex // next and free; taken inside a shard's lock, never around one
	next    uint32     // records handed out so far
	free    []uint32
}

type keyRecBucket struct {
	keyedBucket
	h uint64
}

type keyRecPlain struct {
	keyEntry
	h uint64
}

// recChunk is how many records a chunk holds (all of them when MaxKeys is
// less): 128 KiB of token bucket records.
const recChunk = 1024

func newKeyRecords(maxKeys int, bucket bool) *keyRecords {
	maxKeys = max(0, min(maxKeys, MaxKeysLimit))
	r := hotpath.LineAligned[keyRecords](0)
	r.bucket, r.size = bucket, unsafe.Sizeof(keyRecPlain{})
	if bucket {
		r.size = unsafe.Sizeof(keyRecBucket{})
	}
	r.chunk = max(1, min(recChunk, maxKeys))
	r.dir = make([]unsafe.Pointer, (maxKeys+recChunk-1)/recChunk)
	r.tagMask = ^uint32(0) << bits.Len(uint(maxKeys))
	return r
}

// alloc hands out a record's number: one given back if any, else a new
// (zero) record.
func (r *keyRecords) alloc() (n uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k := len(r.free); k > 0 {
		n = r.free[k-1]
		r.free = r.free[:k-1]
		return n
	}
	n = r.next
	r.next++
	if c := n / recChunk; r.dir[c] == nil {
		if r.bucket {
			r.dir[c] = unsafe.Pointer(unsafe.SliceData(make([]keyRecBucket, r.chunk)))
		} else {
			r.dir[c] = unsafe.Pointer(unsafe.SliceData(make([]keyRecPlain, r.chunk)))
		}
	}
	return n
}

// give takes record n back; its entry must be cleared first.
func (r *keyRecords) give(n uint32) {
	r.mu.Lock()
	r.free = append(r.free, n)
	r.mu.Unlock()
}

// entry is record n's entry.
func (r *keyRecords) entry(n uint32) *keyEntry {
	return (*keyEntry)(unsafe.Add(r.dir[n/recChunk], uintptr(n%recChunk)*r.size))
}

// hash is the key hash stored in en's record.
func (r *keyRecords) hash(en *keyEntry) *uint64 {
	return (*uint64)(unsafe.Add(unsafe.Pointer(en), r.size-8))
}

// bucketOf is the token bucket in en's record, or nil when records hold none.
func (r *keyRecords) bucketOf(en *keyEntry) *algo.Bucket {
	if !r.bucket {
		return nil
	}
	return &(*keyedBucket)(unsafe.Pointer(en)).tb
}

// slot is the index slot for record n of a key hashing to h, and num the
// record a slot names.
func (r *keyRecords) slot(h uint64, n uint32) uint32 { return uint32(h)&r.tagMask | (n + 1) }
func (r *keyRecords) num(s uint32) uint32            { return s&^r.tagMask - 1 }
