//go:build !amd64

package hotpath

import "sync/atomic"

// load2 loads the two words at addr, each atomically.
func load2(addr *[2]uint64) (w0, w1 uint64) {
	return atomic.LoadUint64(&addr[0]), atomic.LoadUint64(&addr[1])
}
