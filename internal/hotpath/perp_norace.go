//go:build !race

package hotpath

import "unsafe"

// slotLoad and slotStore are plain memory accesses: a slot is only touched
// by the goroutine pinned to its P (see PerP).
func slotLoad(p *unsafe.Pointer) unsafe.Pointer     { return *p }
func slotStore(p *unsafe.Pointer, v unsafe.Pointer) { *p = v }
