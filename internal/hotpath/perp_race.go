//go:build race

package hotpath

import (
	"sync/atomic"
	"unsafe"
)

// With the race detector, a slot is read and written atomically: the
// detector cannot see the ordering the scheduler gives a P passed between
// threads (see PerP), and atomics show it one.
func slotLoad(p *unsafe.Pointer) unsafe.Pointer     { return atomic.LoadPointer(p) }
func slotStore(p *unsafe.Pointer, v unsafe.Pointer) { atomic.StorePointer(p, v) }
