package flow

import "math/bits"

// keyMap is a key table shard's index: key hash to entry, an
// open-addressed table with linear probing, in place of a Go map. A
// lookup is a multiply-free index, then a compare or two along one
// contiguous run of slots: on the keyed hot path this costs about a
// quarter of mapaccess1_fast64, whose probing works for any hash and
// load (control bytes, groups, a directory). Here the hashes are already
// seeded and well mixed (hotpath.StrHasher), the shard's capacity bounds
// the load, and a shard's mutex guards every access, so the plain
// textbook table is enough.
//
// A slot is 4 bytes: the number of the entry's record in the table's
// keyRecords (plus one: 0 marks an empty slot) under a tag of the hash's
// low bits (the rest of the 32), so that a probe reads a record only
// when the tag matches; the record's full hash settles it. The index is a
// hash's high bits (its low bits chose the shard). A key hashing to 0 is
// stored as 1 (one more 2^-64 collision). Deletion shifts the rest of the
// run back (no tombstones), so lookups never slow down with churn, and
// gives the record back. The table doubles past 3/4 full up to the least
// power of two that holds the shard's capacity at most 7/8 full (see
// limitTo), and never shrinks (TestMemoryPerKey).
//
// The methods take the records as an argument rather than keeping them,
// so that a shard stays one cache line (TestShardSize).
type keyMap struct {
	slots   []uint32 // len a power of two, or 0 before the first add
	n       int32    // entries held
	shift   uint8    // 64 - log2(len(slots))
	maxLog2 uint8    // log2 of the most slots it grows to
}

// keyHint is where a keyMap's slots are, published for prefetch (which
// runs before the shard's lock is taken): replaced, never changed, when the
// table grows.
type keyHint struct {
	slots []uint32
	shift uint8
}

const keyMapMin = 8 // slots of a table's first allocation

// live maps a key's hash to the one stored (never the empty mark).
func live(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

// get returns h's entry, or nil.
func (m *keyMap) get(r *keyRecords, h uint64) *keyEntry {
	if m.n == 0 {
		return nil
	}
	h = live(h)
	mask := uint64(len(m.slots) - 1)
	tag := uint32(h) & r.tagMask
	for i := h >> m.shift; ; i = (i + 1) & mask {
		s := m.slots[i]
		if s == 0 {
			return nil
		}
		if s&r.tagMask == tag {
			if en := r.entry(r.num(s)); *r.hash(en) == h {
				return en
			}
		}
	}
}

// limitTo bounds the table for at most capacity entries: it grows to the
// least power of two of slots holding them at most 7/8 full. Linear
// probing's hits stay short there (about 4.5 slots at 7/8, 2.5 at 3/4)
// while a shard kept at 3/4 would, just past a power of two, spend twice
// the memory per key.
func (m *keyMap) limitTo(capacity int) {
	m.maxLog2 = uint8(bits.Len(uint(max(keyMapMin, capacity+capacity/7+1) - 1)))
}

// add stores a record for h, which must not be held, and returns its
// entry for the caller to fill (compiledRule.initKey) and whether the
// slots moved (the table grew). The map must
// hold fewer entries than the capacity given to limitTo.
func (m *keyMap) add(r *keyRecords, h uint64) (en *keyEntry, grew bool) {
	if (int(m.n)+1)*4 > len(m.slots)*3 && len(m.slots) < 1<<m.maxLog2 {
		m.grow(r)
		grew = true
	}
	h = live(h)
	n := r.alloc()
	en = r.entry(n)
	*r.hash(en) = h
	m.insert(h, r.slot(h, n))
	m.n++
	return en, grew
}

func (m *keyMap) insert(h uint64, s uint32) {
	mask := uint64(len(m.slots) - 1)
	i := h >> m.shift
	for m.slots[i] != 0 {
		i = (i + 1) & mask
	}
	m.slots[i] = s
}

func (m *keyMap) grow(r *keyRecords) {
	old := m.slots
	n := max(keyMapMin, 2*len(old))
	m.slots = make([]uint32, n)
	m.shift = uint8(64 - bits.TrailingZeros(uint(n)))
	for _, s := range old {
		if s != 0 {
			m.insert(*r.hash(r.entry(r.num(s))), s)
		}
	}
}

// del drops h; it reports whether it was held.
func (m *keyMap) del(r *keyRecords, h uint64) bool {
	if m.n == 0 {
		return false
	}
	h = live(h)
	mask := uint64(len(m.slots) - 1)
	tag := uint32(h) & r.tagMask
	for i := h >> m.shift; ; i = (i + 1) & mask {
		s := m.slots[i]
		if s == 0 {
			return false
		}
		if s&r.tagMask == tag && *r.hash(r.entry(r.num(s))) == h {
			m.deleteAt(r, i)
			return true
		}
	}
}

// deleteAt gives slot i's record back, empties the slot and moves back
// the entries after it in its run that may sit there (their home slot is
// not between i and them), so every entry stays reachable from its home
// slot without a gap.
func (m *keyMap) deleteAt(r *keyRecords, i uint64) {
	n := r.num(m.slots[i])
	en := r.entry(n)
	en.lim = nil // the limiter may go (calls holding it keep it)
	r.give(n)
	mask := uint64(len(m.slots) - 1)
	hole := i
	for j := (i + 1) & mask; m.slots[j] != 0; j = (j + 1) & mask {
		home := *r.hash(r.entry(r.num(m.slots[j]))) >> m.shift
		// j may fill the hole unless its home lies cyclically in (hole, j].
		if (j-home)&mask >= (j-hole)&mask {
			m.slots[hole] = m.slots[j]
			hole = j
		}
	}
	m.slots[hole] = 0
	m.n--
}

// sweep drops every entry for which drop returns true.
func (m *keyMap) sweep(r *keyRecords, drop func(*keyEntry) bool) {
	// A deletion moves later entries of the run back, possibly into i
	// itself: look at i again. An entry that wraps from the table's start
	// to its end is looked at twice, which drop's answer allows.
	for i := uint64(0); i < uint64(len(m.slots)); {
		if s := m.slots[i]; s != 0 && drop(r.entry(r.num(s))) {
			m.deleteAt(r, i)
			continue
		}
		i++
	}
}

// sample calls fn with up to n entries and their hashes, from slot start
// on (wrapping), for eviction: fn returns false to stop early.
func (m *keyMap) sample(r *keyRecords, start uint64, n int, fn func(h uint64, en *keyEntry) bool) {
	mask := uint64(len(m.slots) - 1)
	for i, seen, k := start&mask, 0, 0; seen < n && k < len(m.slots); i, k = (i+1)&mask, k+1 {
		if s := m.slots[i]; s != 0 {
			seen++
			en := r.entry(r.num(s))
			if !fn(*r.hash(en), en) {
				return
			}
		}
	}
}

// each calls fn with every entry.
func (m *keyMap) each(r *keyRecords, fn func(*keyEntry)) {
	for _, s := range m.slots {
		if s != 0 {
			fn(r.entry(r.num(s)))
		}
	}
}
