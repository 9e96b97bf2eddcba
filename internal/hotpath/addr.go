package hotpath

import "unsafe"

// AddrSlot picks one of 1<<bits slots for s by the address of its bytes,
// not their content: a multiplication. Found that way and compared, a
// short resource name cost flow 30–45 instructions where its map
// lookup (hashing the content) cost about 100 (callgrind). Callers keep a small table
// of recent answers in those slots and must compare the content before
// using a slot's answer: two strings at one address are the same string
// in safe Go, but code that builds strings over reused buffers with
// unsafe can put other content there. The names a service passes to a
// hot path are mostly constants or kept in a struct, so their addresses
// repeat call after call and the slot hits; a string built per call
// misses and costs the caller its lookup plus the compare.
func AddrSlot(s string, bits uint) uint {
	p := uint64(uintptr(unsafe.Pointer(unsafe.StringData(s))))
	return uint((p * 0x9e3779b97f4a7c15) >> (64 - bits)) // Fibonacci hashing
}
