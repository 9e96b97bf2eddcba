package flow

import (
	"sync/atomic"
	"time"

	"github.com/flowgate/flowgate/flow/keytab"
)

// keyTable holds a user, ip or param rule's limiters, one per key, in a
// keytab.Table: bounded by the rule's MaxKeys, forgetting keys idle past
// its IdleTTL, the least recently used evicted (approximately) when full.
//
// A key evicted or forgotten while it has concurrency permits in flight
// starts afresh when it comes back: its new limiter does not see the
// permits still held (they are released into the old one), so for that
// moment the key can exceed its concurrency cap. Size MaxKeys and IdleTTL
// above the live clients and the longest call to avoid it. A call that
// took a key's limiter just before its eviction takes and refunds its
// permits there only: the key's next call gets a new limiter.
type keyTable = keytab.Table[keyEntry]

// keyEntry is what a keyed rule holds for one key: its limiter and the
// limit generation (see compiledRule.gen, here modulo 2^31) the limiter was
// last set to, with genBusy set while a call sets it.
type keyEntry struct {
	lim limiter
	gen atomic.Uint32
}

const genBusy = 1 << 31

func keyGen(cr *compiledRule) uint32 { return uint32(cr.gen.Load()) &^ genBusy }

func newKeyTable(maxKeys int, idleTTL time.Duration) *keyTable {
	return keytab.New[keyEntry](maxKeys, idleTTL)
}

// refresh sets en's limiter to cr's current limit when the limit changed
// since it was last set: one atomic load when it did not. One call at a
// time sets it (the busy bit); calls meanwhile use the limiter as it is,
// as they would have a moment earlier.
func (en *keyEntry) refresh(cr *compiledRule, now int64) {
	eg := en.gen.Load()
	if eg == keyGen(cr) || eg&genBusy != 0 || !en.gen.CompareAndSwap(eg, eg|genBusy) {
		return
	}
	// The generation is read before the limit (recompute writes them in
	// the other order): the limit set is g's or a newer one, whose own
	// generation then differs from g and is applied on a later call.
	g := keyGen(cr)
	en.lim.SetLimit(now, cr.limit())
	en.gen.Store(g)
}

// keyLimiter returns key's limiter at now, creating it when the key is
// new or was idle past the TTL, and applying a changed limit.
func (cr *compiledRule) keyLimiter(key string, now int64) (limiter, error) {
	en, err := cr.keys.Get(key, now, func(en *keyEntry) error { return cr.initKey(en, now) })
	if err != nil {
		return nil, err
	}
	en.refresh(cr, now)
	return en.lim, nil
}

// peekKey returns key's limiter when one is held and not idle past the
// TTL, with a changed limit applied, without creating one or touching its
// age; nil otherwise.
func (cr *compiledRule) peekKey(key string, now int64) limiter {
	en := cr.keys.Peek(key, now)
	if en == nil {
		return nil
	}
	en.refresh(cr, now)
	return en.lim
}

// eachKeyLimiter calls fn with every tracked key's limiter, one shard of
// the table locked at a time (for snapshots: fn must be quick).
func (cr *compiledRule) eachKeyLimiter(fn func(limiter)) {
	cr.keys.Each(func(_ string, en *keyEntry) { fn(en.lim) })
}
