package keytab

import "math/rand/v2"

// index maps 64-bit hashes, each held at most once, to entries. It is an
// open-addressed table of 4-byte slots with linear probing; a slot holds
// a tag (the hash's top byte) and a number, which picks the entry's
// pointer in a dense array. A lookup reads the slot its hash starts at
// and the few after it (sixteen slots to a cache line), follows a slot
// whose tag matches to its entry, and accepts the entry only when the
// entry's own hash is the one looked for; the caller then compares the
// key. Neither tag nor hash alone decides which key an entry is, and a
// number freed by a deletion names a new entry, never an old one again:
// whoever holds the old entry holds its pointer, not its number.
//
// Slots this small keep the index of a million keys near 8 MiB, not the
// 20 to 40 MiB of 16-byte slots (a Go map's, or a hash and a pointer),
// and on the machine bench/README.md describes that is the difference
// between a read from cache and one from memory ("Cost growth",
// GrowthFloorStream). The pointers are a second read, in the order keys
// were admitted.
//
// The table doubles when three quarters full (placing every slot anew,
// which reads every entry's hash, under the shard's lock: a pause linear
// in the shard's keys, once per doubling) and never shrinks. Deletion
// shifts the slots after the hole back (no tombstones), so every probe
// ends at a free slot.
type index[V any] struct {
	slots []uint32    // a power of two long, or nil; 0 marks a free slot
	ptrs  []*entry[V] // by number; nil: a free number
	free  []uint32    // free numbers
	n     int         // slots in use
	// most is the numbers the index may hand out, maxNums when 0 (tests
	// set fewer, to fill an index without sixteen million keys).
	most int
}

const (
	numBits = 24
	numMask = 1<<numBits - 1 // a slot's number plus one
	maxNums = numMask - 1    // numbers per index; more keys go to spill
)

// tag is h's top byte, where a slot keeps it.
func tag(h uint64) uint32 { return uint32(h>>56) << numBits }

// home is where h's probe starts in a table of mask+1 slots: bits from
// the 32nd up, because the table picks a key's shard by the lowest ones.
func home(h uint64, mask int) int { return int(h>>32) & mask }

// minSlots is the size of an index's first table.
const minSlots = 16

// find returns the place of h's slot, or -1.
func (x *index[V]) find(h uint64) int {
	if x.n == 0 {
		return -1
	}
	mask, t := len(x.slots)-1, tag(h)
	for i := home(h, mask); ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return -1
		}
		if s&^numMask == t && x.ptrs[s&numMask-1].h == h {
			return i
		}
	}
}

// get returns h's entry, or nil.
func (x *index[V]) get(h uint64) *entry[V] {
	if i := x.find(h); i >= 0 {
		return x.ptrs[x.slots[i]&numMask-1]
	}
	return nil
}

// add stores e under h, which is not held, and reports whether it could
// (false when the index holds maxNums entries).
func (x *index[V]) add(h uint64, e *entry[V]) bool {
	var num uint32
	switch {
	case len(x.free) > 0:
		num = x.free[len(x.free)-1]
		x.free = x.free[:len(x.free)-1]
	case len(x.ptrs) < x.capacity():
		num = uint32(len(x.ptrs))
		x.ptrs = append(x.ptrs, nil)
	default:
		return false
	}
	e.h = h
	x.ptrs[num] = e
	if 4*(x.n+1) > 3*len(x.slots) {
		x.grow()
	}
	x.place(tag(h) | (num + 1))
	x.n++
	return true
}

// capacity is the numbers x may hand out: most, or maxNums.
func (x *index[V]) capacity() int {
	if x.most > 0 {
		return x.most
	}
	return maxNums
}

// replace makes e the entry of h, which is held.
func (x *index[V]) replace(h uint64, e *entry[V]) {
	e.h = h
	x.ptrs[x.slots[x.find(h)]&numMask-1] = e
}

// place puts slot s, whose entry's number it holds, at the first free
// place from its hash's home.
func (x *index[V]) place(s uint32) {
	mask := len(x.slots) - 1
	i := home(x.ptrs[s&numMask-1].h, mask)
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = s
}

// grow doubles the table and places every slot anew.
func (x *index[V]) grow() {
	old := x.slots
	x.slots = make([]uint32, max(minSlots, 2*len(old)))
	for _, s := range old {
		if s != 0 {
			x.place(s)
		}
	}
}

// delete drops h's slot and frees its number, if h is held.
func (x *index[V]) delete(h uint64) {
	if i := x.find(h); i >= 0 {
		x.deleteAt(i)
	}
}

// deleteAt frees slot i, which is in use, and its number, and moves back
// each later slot of the run that may then sit nearer its home: a slot
// whose home is not cyclically in (i, j] can fill the hole at i.
func (x *index[V]) deleteAt(i int) {
	num := x.slots[i]&numMask - 1
	x.ptrs[num] = nil
	x.free = append(x.free, num)
	mask := len(x.slots) - 1
	for j := (i + 1) & mask; x.slots[j] != 0; j = (j + 1) & mask {
		k := home(x.ptrs[x.slots[j]&numMask-1].h, mask)
		if i <= j && (k <= i || k > j) || i > j && k <= i && k > j {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = 0
	x.n--
}

// sweep drops every entry drop reports true for.
func (x *index[V]) sweep(drop func(*entry[V]) bool) {
	for _, e := range x.ptrs {
		if e != nil && drop(e) {
			x.delete(e.h)
		}
	}
}

// sample calls fn with the entries of the slots in use from a random
// place on, in turn, until fn returns false or it has visited every slot.
func (x *index[V]) sample(fn func(h uint64, e *entry[V]) bool) {
	if x.n == 0 {
		return
	}
	mask := len(x.slots) - 1
	start := rand.IntN(len(x.slots))
	for k := range len(x.slots) {
		if s := x.slots[(start+k)&mask]; s != 0 {
			if e := x.ptrs[s&numMask-1]; !fn(e.h, e) {
				return
			}
		}
	}
}
