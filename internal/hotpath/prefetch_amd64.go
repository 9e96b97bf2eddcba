package hotpath

import "unsafe"

// Prefetch starts loading the cache line at addr and returns without
// waiting for it (see Prefetch in doc.go).
//
//go:noescape
func Prefetch(addr unsafe.Pointer)
