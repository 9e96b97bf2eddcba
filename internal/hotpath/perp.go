package hotpath

import (
	"runtime"
	"unsafe"
)

// procPin pins the calling goroutine to its P (the scheduler's processor:
// one runs Go code on one core at a time) and returns the P's id; nothing
// else runs on that P until procUnpin. sync.Pool rests on the same pair;
// the runtime keeps both names linkable on purpose (go.dev/issue/67401).
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// PerP keeps at most one spare object for each P, for objects that are taken
// and given back on one core millions of times a second (pooled permits).
// sync.Pool does the same and more (a private slot, a lock-free shared
// queue per P, stealing, a victim cache emptied by the collector): its Get
// and Put cost about 58 instructions each with the pinning, these about 40
// (callgrind, flow's one-rule Entry+Exit). Get returns nil and Put false when the slot
// is empty or full, or the P is beyond those that existed at NewPerP
// (GOMAXPROCS raised since): the caller falls back to its sync.Pool. The
// spares are kept until the PerP is dropped; at most GOMAXPROCS of them.
//
// Only the goroutine pinned to a P touches its slot, and the scheduler
// orders memory when a P passes from one thread to another, so the slot
// needs no atomic instruction (see slotLoad); each slot has a cache line
// of its own, as two Ps writing one line would move it between cores.
//
// It holds unsafe.Pointer rather than a type parameter: a generic method
// is called through a dictionary and is not inlined, which costs more than
// the slot itself. The caller converts, from and to one pointer type.
type PerP struct {
	slots []perPSlot
}

type perPSlot struct {
	v unsafe.Pointer
	_ [CacheLine - 8]byte
}

// NewPerP returns a PerP with a slot for each of GOMAXPROCS Ps.
func NewPerP() PerP {
	return PerP{slots: make([]perPSlot, runtime.GOMAXPROCS(0))}
}

// Get takes the spare of the calling P, or returns nil.
func (c *PerP) Get() unsafe.Pointer {
	var v unsafe.Pointer
	if id := procPin(); id < len(c.slots) {
		s := &c.slots[id]
		if v = slotLoad(&s.v); v != nil {
			slotStore(&s.v, nil)
		}
	}
	procUnpin()
	return v
}

// Put keeps v as the calling P's spare, or returns false when it has one.
func (c *PerP) Put(v unsafe.Pointer) bool {
	ok := false
	if id := procPin(); id < len(c.slots) {
		s := &c.slots[id]
		if ok = slotLoad(&s.v) == nil; ok {
			slotStore(&s.v, v)
		}
	}
	procUnpin()
	return ok
}
