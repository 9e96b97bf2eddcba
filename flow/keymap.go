package flow

import "math/bits"

// keyMap is a key table shard's index: 64-bit key hash to entry, an
// open-addressed table with linear probing, in place of a Go map. A
// lookup is a multiply-free index, then a compare or two along one
// contiguous run of slots: on the keyed hot path this costs about a
// quarter of mapaccess1_fast64, whose probing works for any hash and
// load (control bytes, groups, a directory). Here the hashes are already
// seeded and well mixed (hotpath.StrHasher), the shard's capacity bounds
// the load, and a shard's mutex guards every access, so the plain
// textbook table is enough.
//
// The index is a hash's high bits (its low bits chose the shard). Hash 0
// marks an empty slot, so a key hashing to 0 is stored as 1 (one more
// 2^-64 collision). Deletion shifts the rest of the run back (no
// tombstones), so lookups never slow down with churn. The table doubles
// past 3/4 full up to the least power of two that holds the shard's
// capacity at most 7/8 full (see limitTo), and never shrinks: per key it
// then costs about what Go's map did (TestMemoryPerKey).
type keyMap struct {
	slots   []keySlot // len a power of two, or 0 before the first put
	n       int32     // entries held
	shift   uint8     // 64 - log2(len(slots))
	maxLog2 uint8     // log2 of the most slots it grows to
}

// keyHint is where a keyMap's slots are, published for prefetch (which
// runs before the shard's lock is taken): replaced, never changed, when the
// table grows.
type keyHint struct {
	slots []keySlot
	shift uint8
}

type keySlot struct {
	h  uint64 // 0: empty
	en *keyEntry
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
func (m *keyMap) get(h uint64) *keyEntry {
	if m.n == 0 {
		return nil
	}
	h = live(h)
	mask := uint64(len(m.slots) - 1)
	for i := h >> m.shift; ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.h == h {
			return s.en
		}
		if s.h == 0 {
			return nil
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

// put stores en for h, which must not be held; the map must hold fewer
// entries than the capacity given to limitTo. It reports whether the
// slots moved (the table grew).
func (m *keyMap) put(h uint64, en *keyEntry) (grew bool) {
	if (int(m.n)+1)*4 > len(m.slots)*3 && len(m.slots) < 1<<m.maxLog2 {
		m.grow()
		grew = true
	}
	m.insert(live(h), en)
	m.n++
	return grew
}

func (m *keyMap) insert(h uint64, en *keyEntry) {
	mask := uint64(len(m.slots) - 1)
	i := h >> m.shift
	for m.slots[i].h != 0 {
		i = (i + 1) & mask
	}
	m.slots[i] = keySlot{h, en}
}

func (m *keyMap) grow() {
	old := m.slots
	n := max(keyMapMin, 2*len(old))
	m.slots = make([]keySlot, n)
	m.shift = uint8(64 - bits.TrailingZeros(uint(n)))
	for _, s := range old {
		if s.h != 0 {
			m.insert(s.h, s.en)
		}
	}
}

// del drops h; it reports whether it was held.
func (m *keyMap) del(h uint64) bool {
	if m.n == 0 {
		return false
	}
	h = live(h)
	mask := uint64(len(m.slots) - 1)
	for i := h >> m.shift; ; i = (i + 1) & mask {
		switch m.slots[i].h {
		case h:
			m.deleteAt(i)
			return true
		case 0:
			return false
		}
	}
}

// deleteAt empties slot i and moves back the entries after it in its run
// that may sit there (their home slot is not between i and them), so
// every entry stays reachable from its home slot without a gap.
func (m *keyMap) deleteAt(i uint64) {
	mask := uint64(len(m.slots) - 1)
	hole := i
	for j := (i + 1) & mask; m.slots[j].h != 0; j = (j + 1) & mask {
		home := m.slots[j].h >> m.shift
		// j may fill the hole unless its home lies cyclically in (hole, j].
		if (j-home)&mask >= (j-hole)&mask {
			m.slots[hole] = m.slots[j]
			hole = j
		}
	}
	m.slots[hole] = keySlot{}
	m.n--
}

// sweep drops every entry for which drop returns true.
func (m *keyMap) sweep(drop func(*keyEntry) bool) {
	// A deletion moves later entries of the run back, possibly into i
	// itself: look at i again. An entry that wraps from the table's start
	// to its end is looked at twice, which drop's answer allows.
	for i := uint64(0); i < uint64(len(m.slots)); {
		if s := &m.slots[i]; s.h != 0 && drop(s.en) {
			m.deleteAt(i)
			continue
		}
		i++
	}
}

// sample calls fn with up to n entries, from slot start on (wrapping),
// for eviction: fn returns false to stop early.
func (m *keyMap) sample(start uint64, n int, fn func(h uint64, en *keyEntry) bool) {
	mask := uint64(len(m.slots) - 1)
	for i, seen, k := start&mask, 0, 0; seen < n && k < len(m.slots); i, k = (i+1)&mask, k+1 {
		if s := m.slots[i]; s.h != 0 {
			seen++
			if !fn(s.h, s.en) {
				return
			}
		}
	}
}

// each calls fn with every entry.
func (m *keyMap) each(fn func(*keyEntry)) {
	for _, s := range m.slots {
		if s.h != 0 {
			fn(s.en)
		}
	}
}
