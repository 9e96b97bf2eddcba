package warmup

import "sync/atomic"

// useCAS16 reports whether the CPU has CMPXCHG16B (all x86-64 CPUs of the
// last fifteen years; GOAMD64=v1 does not promise it). Set once at start;
// tests turn it off to run the locked path.
var useCAS16 = hasCX16()

func hasCX16() bool

// usePrefetchW reports whether the CPU has PREFETCHW (AMD since K8, Intel
// since Broadwell).
var usePrefetchW = hasPrefetchW()

func hasPrefetchW() bool

//go:noescape
func loadForWrite(addr *[2]uint64) (w0, w1 uint64)

//go:noescape
func cas128(addr *[2]uint64, old0, old1, new0, new1 uint64) bool

//go:noescape
func load128(addr *[2]uint64) (w0, w1 uint64)

func (l *Limiter) cas(old0, old1, new0, new1 uint64) bool {
	if useCAS16 {
		return cas128(l.pair(), old0, old1, new0, new1)
	}
	return l.casLocked(old0, old1, new0, new1)
}

func (l *Limiter) load128() (uint64, uint64) {
	if useCAS16 {
		return load128(l.pair())
	}
	return l.load128Locked()
}

// loadW loads the two words to compute a CAS on. Asking for the cache
// line exclusive first means one transfer between cores instead of two
// (one to read it shared, one to upgrade it for the CAS) when another core
// wrote it last; with the line already ours it costs about nothing. Each
// load is atomic on amd64; a torn pair fails the CAS.
func (l *Limiter) loadW() (uint64, uint64) {
	if usePrefetchW {
		return loadForWrite(l.pair())
	}
	return l.load0(), l.load1()
}

func (l *Limiter) load0() uint64 { return atomic.LoadUint64(&l.pair()[0]) }
func (l *Limiter) load1() uint64 { return atomic.LoadUint64(&l.pair()[1]) }
