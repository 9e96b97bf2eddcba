package keytab

import "math/rand/v2"

// index maps 64-bit hashes, each held at most once, to entries: an
// open-addressed table with linear probing, whose 16-byte slots lie side
// by side (four to a cache line) and hold the hash itself. A lookup reads
// the slot its hash starts at and the few after it, nearly always one
// cache line, then the entry, where the caller compares the key: the
// index alone never decides which key an entry is.
//
// A Go map by hash does the same job, but its lookup reads a table
// header, a group's control word and then the slot, which at millions of
// keys are two or three places no cache holds where this reads one
// (bench/README.md, "Cost growth").
//
// The table doubles when three quarters full (rehashing every slot under
// the shard's lock: a pause linear in the shard's keys, once per
// doubling) and never shrinks. Deletion shifts the slots after the hole
// back (no tombstones), so every probe ends at a free slot.
type index[V any] struct {
	slots []slot[V] // a power of two long, or nil
	n     int       // slots in use
}

// slot is one hash and its entry; e nil marks a free slot.
type slot[V any] struct {
	h uint64
	e *entry[V]
}

// minSlots is the size of an index's first table.
const minSlots = 8

// home is where h's probe starts in a table of mask+1 slots: bits from
// the 32nd up, because the table picks a key's shard by the lowest ones.
func home(h uint64, mask int) int { return int(h>>32) & mask }

// get returns h's entry, or nil.
func (x *index[V]) get(h uint64) *entry[V] {
	if x.n == 0 {
		return nil
	}
	mask := len(x.slots) - 1
	for i := home(h, mask); ; i = (i + 1) & mask {
		if s := &x.slots[i]; s.e == nil || s.h == h {
			return s.e
		}
	}
}

// set makes e h's entry, in place of the one it had if any.
func (x *index[V]) set(h uint64, e *entry[V]) {
	if 4*(x.n+1) > 3*len(x.slots) {
		x.grow()
	}
	mask := len(x.slots) - 1
	for i := home(h, mask); ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.e == nil {
			*s = slot[V]{h, e}
			x.n++
			return
		}
		if s.h == h {
			s.e = e
			return
		}
	}
}

// grow doubles the table and places every slot anew.
func (x *index[V]) grow() {
	old := x.slots
	size := max(minSlots, 2*len(old))
	x.slots = make([]slot[V], size)
	x.n = 0
	for _, s := range old {
		if s.e != nil {
			x.set(s.h, s.e)
		}
	}
}

// delete drops h's slot, if held.
func (x *index[V]) delete(h uint64) {
	if x.n == 0 {
		return
	}
	mask := len(x.slots) - 1
	for i := home(h, mask); x.slots[i].e != nil; i = (i + 1) & mask {
		if x.slots[i].h == h {
			x.deleteAt(i)
			return
		}
	}
}

// deleteAt frees slot i, which is in use, and moves back each later slot
// of the run that may then sit nearer its home: a slot whose home is not
// cyclically in (i, j] can fill the hole at i.
func (x *index[V]) deleteAt(i int) {
	mask := len(x.slots) - 1
	for j := (i + 1) & mask; x.slots[j].e != nil; j = (j + 1) & mask {
		k := home(x.slots[j].h, mask)
		if i <= j && (k <= i || k > j) || i > j && k <= i && k > j {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = slot[V]{}
	x.n--
}

// sweep frees every slot whose entry drop reports true.
func (x *index[V]) sweep(drop func(*entry[V]) bool) {
	for i := 0; i < len(x.slots); {
		if e := x.slots[i].e; e != nil && drop(e) {
			// A later slot may have moved to i: look at i again. One
			// from the table's start, seen already, may move to its end
			// and be seen twice.
			x.deleteAt(i)
			continue
		}
		i++
	}
}

// sample calls fn with the slots in use from a random place on, in turn,
// until fn returns false or it has visited every slot.
func (x *index[V]) sample(fn func(h uint64, e *entry[V]) bool) {
	if x.n == 0 {
		return
	}
	mask := len(x.slots) - 1
	start := rand.IntN(len(x.slots))
	for k := range len(x.slots) {
		if s := x.slots[(start+k)&mask]; s.e != nil && !fn(s.h, s.e) {
			return
		}
	}
}
