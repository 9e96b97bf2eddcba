package flow

import (
	"testing"
	"unsafe"
)

// TestPermitSize: permits of different Ps must not share a cache line (see
// the padding in Permit), so Permit's size is a multiple of 64 B and the
// allocator's size class for it is too.
func TestPermitSize(t *testing.T) {
	if n := unsafe.Sizeof(Permit{}); n%64 != 0 {
		t.Fatalf("Permit is %d B, want a multiple of 64", n)
	}
	e := NewEngine()
	var held []*Permit
	for range 4 {
		p := e.getPermit(0)
		held = append(held, p) // not back to the pool: a new one each time
		if addr := uintptr(unsafe.Pointer(p)); addr%64 != 0 {
			t.Fatalf("a Permit at %#x, want 64-byte aligned", addr)
		}
	}
}

// TestBucketLayout: a rule's own token bucket has its state starting a
// cache line, alone with what a reservation reads (see newBucket).
func TestBucketLayout(t *testing.T) {
	for range 16 {
		b := newBucket(1, false)
		if addr := uintptr(unsafe.Pointer(&b.l)); addr%64 != 0 {
			t.Fatalf("limiter at %#x, want 64-byte aligned", addr)
		}
	}
}
