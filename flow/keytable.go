package flow

import (
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/flow/internal/algo"
	"github.com/flowgate/flowgate/flow/keytab"
)

// keyTable holds a user, ip or param rule's limiters, one per key, in a
// keytab.Table: bounded by the rule's MaxKeys, forgetting keys idle past
// its IdleTTL, the least recently used evicted (approximately) when full.
// A token-bucket rule's table holds each key's bucket in the key's entry
// (buckets); any other rule's holds a pointer to the limiter (plain).
// Exactly one of the two is set.
//
// A key evicted or forgotten while it has concurrency permits in flight
// starts afresh when it comes back: its new limiter does not see the
// permits still held (they are released into the old one), so for that
// moment the key can exceed its concurrency cap. Size MaxKeys and IdleTTL
// above the live clients and the longest call to avoid it. A call that
// took a key's limiter just before its eviction takes and refunds its
// permits there only: the key's next call gets a new limiter.
type keyTable struct {
	buckets *keytab.Table[bucketKey]
	plain   *keytab.Table[keyEntry]
}

// keyEntry is what a keyed rule holds for one key: its limiter and the
// limit generation (see compiledRule.gen, here modulo 2^31) the limiter was
// last set to, with genBusy set while a call sets it.
type keyEntry struct {
	lim limiter
	gen atomic.Uint32
}

// bucketKey is keyEntry for a token-bucket rule, with the bucket itself in
// place of a pointer to it: a call reads the key and its bucket from one
// object (an entry of 128 bytes, see keytab's inlineKey).
type bucketKey struct {
	tb  algo.Bucket
	gen atomic.Uint32
}

const genBusy = 1 << 31

func keyGen(cr *compiledRule) uint32 { return uint32(cr.gen.Load()) &^ genBusy }

// newKeyTable returns the table of a keyed rule whose limiter is lim.
func newKeyTable(maxKeys int, idleTTL time.Duration, lim limiter) *keyTable {
	if _, ok := lim.(*algo.Bucket); ok {
		return &keyTable{buckets: keytab.New[bucketKey](maxKeys, idleTTL)}
	}
	return &keyTable{plain: keytab.New[keyEntry](maxKeys, idleTTL)}
}

// Forget drops key and reports whether it was held.
func (kt *keyTable) Forget(key string) bool {
	if kt.buckets != nil {
		return kt.buckets.Forget(key)
	}
	return kt.plain.Forget(key)
}

// Len is the number of keys held (see keytab.Table.Len).
func (kt *keyTable) Len() int {
	if kt.buckets != nil {
		return kt.buckets.Len()
	}
	return kt.plain.Len()
}

// SweepAll forgets every key idle past the TTL at now.
func (kt *keyTable) SweepAll(now int64) {
	if kt.buckets != nil {
		kt.buckets.SweepAll(now)
	} else {
		kt.plain.SweepAll(now)
	}
}

// refreshKey sets lim, a key's limiter whose generation is gen, to cr's
// current limit when the limit changed since it was last set: one atomic
// load when it did not. One call at a time sets it (the busy bit); calls
// meanwhile use the limiter as it is, as they would have a moment earlier.
func refreshKey(gen *atomic.Uint32, lim limiter, cr *compiledRule, now int64) {
	eg := gen.Load()
	if eg == keyGen(cr) || eg&genBusy != 0 || !gen.CompareAndSwap(eg, eg|genBusy) {
		return
	}
	// The generation is read before the limit (recompute writes them in
	// the other order): the limit set is g's or a newer one, whose own
	// generation then differs from g and is applied on a later call.
	g := keyGen(cr)
	lim.SetLimit(now, cr.limit())
	gen.Store(g)
}

// keyLimiter returns key's limiter at now, creating it when the key is
// new or was idle past the TTL, and applying a changed limit.
func (cr *compiledRule) keyLimiter(key string, now int64) (limiter, error) {
	if b := cr.keys.buckets; b != nil {
		en, err := b.Get(key, now, func(en *bucketKey) error { return cr.initBucketKey(en, now) })
		if err != nil {
			return nil, err
		}
		refreshKey(&en.gen, &en.tb, cr, now)
		return &en.tb, nil
	}
	en, err := cr.keys.plain.Get(key, now, func(en *keyEntry) error { return cr.initKey(en, now) })
	if err != nil {
		return nil, err
	}
	refreshKey(&en.gen, en.lim, cr, now)
	return en.lim, nil
}

// peekKey returns key's limiter when one is held and not idle past the
// TTL, with a changed limit applied, without creating one or touching its
// age; nil otherwise.
func (cr *compiledRule) peekKey(key string, now int64) limiter {
	if b := cr.keys.buckets; b != nil {
		en := b.Peek(key, now)
		if en == nil {
			return nil
		}
		refreshKey(&en.gen, &en.tb, cr, now)
		return &en.tb
	}
	en := cr.keys.plain.Peek(key, now)
	if en == nil {
		return nil
	}
	refreshKey(&en.gen, en.lim, cr, now)
	return en.lim
}

// eachKeyLimiter calls fn with every tracked key's limiter, one shard of
// the table locked at a time (for snapshots: fn must be quick).
func (cr *compiledRule) eachKeyLimiter(fn func(limiter)) {
	if b := cr.keys.buckets; b != nil {
		b.Each(func(en *bucketKey) { fn(&en.tb) })
	} else {
		cr.keys.plain.Each(func(en *keyEntry) { fn(en.lim) })
	}
}
