package hotpath

import (
	"sync/atomic"
	"unsafe"
)

// CacheLine is the size of the unit that moves between cores (x86-64 and
// most arm64 cores).
const CacheLine = 64

// LineAligned returns a new zero T whose byte at offset off (from
// unsafe.Offsetof) starts a cache line. The allocator promises only 8-byte
// alignment, so it allocates eight slots whose stride is an odd multiple of
// 8 bytes: their offsets modulo 64 are then every multiple of 8, one of
// them is right, and the other seven stay unused (the price: eight times
// the object, for the few objects every core writes). T must be 8-byte
// aligned (hold a 64-bit word or pointer).
func LineAligned[T any](off uintptr) *T {
	var zero T
	if unsafe.Sizeof(zero)/8%2 == 1 {
		return pick(new([8]T), off)
	}
	slots := new([8]padded[T])
	return &pick(slots, off).v
}

// padded is T with 8 bytes more, to make an even word count odd.
type padded[T any] struct {
	v T
	_ [8]byte
}

func pick[S any](slots *[8]S, off uintptr) *S {
	for i := range slots {
		if (uintptr(unsafe.Pointer(&slots[i]))+off)%CacheLine == 0 {
			return &slots[i]
		}
	}
	return &slots[0] // unreachable for 8-byte aligned types
}

// LaneCount is how many lanes to split a per-call counter into for procs
// cores: twice procs, so that callers on different cores rarely share one,
// rounded up to a power of two (a lane is picked with a mask), at most max.
func LaneCount(procs, max int) int {
	n := 1
	for n < 2*procs && n < max {
		n <<= 1
	}
	return n
}

// Pair16 is the 16-byte aligned pair of words inside the three words at p
// (8-byte aligned, as Go's heap lays them; it does not move objects), as
// CAS128 and Load128 need. It takes an unsafe.Pointer rather than a field's
// address on purpose: taking the address of a field nil-checks its object
// with a load, and that load would fetch the line shared before
// LoadForWrite could ask for it exclusive.
func Pair16(p unsafe.Pointer) *[2]uint64 {
	if uintptr(p)&15 != 0 {
		p = unsafe.Add(p, 8)
	}
	return (*[2]uint64)(p)
}

// StoreUnpublished32 stores v to *w with a plain store. Only for a word no
// other goroutine can read yet: an object between a pool's Get and the
// moment it is handed on through something that orders memory (a channel,
// a pool's Put, a return to a caller that then shares it that way).
func StoreUnpublished32(w *atomic.Uint32, v uint32) {
	*(*uint32)(unsafe.Pointer(w)) = v
}
