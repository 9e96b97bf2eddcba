//go:build !amd64

package hotpath

// HasCAS16 is false: no 16-byte CAS is used on this architecture, so
// CAS128 and Load128 must not be called (callers use a lock).
var HasCAS16 = false

// LoadForWrite loads the two words at addr, each atomically (the pair may
// be torn). Without PREFETCHW it is two plain atomic loads.
func LoadForWrite(addr *[2]uint64) (w0, w1 uint64) { return load2(addr) }

// CAS128 panics: see HasCAS16.
func CAS128(addr *[2]uint64, old0, old1, new0, new1 uint64) bool {
	panic("hotpath: CAS128 without HasCAS16")
}

// Load128 panics: see HasCAS16.
func Load128(addr *[2]uint64) (w0, w1 uint64) { panic("hotpath: Load128 without HasCAS16") }
