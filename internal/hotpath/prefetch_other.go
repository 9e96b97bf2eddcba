//go:build !amd64

package hotpath

import "unsafe"

// Prefetch does nothing on this architecture.
func Prefetch(addr unsafe.Pointer) {}
