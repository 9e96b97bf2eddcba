package warmup

import (
	"sync/atomic"
	"unsafe"

	"github.com/flowgate/flowgate/internal/hotpath"
)

// The state's two words are read and written as one with the 16-byte CAS
// of package hotpath where the CPU has it, and under l.guard where it does
// not. hotpath explains the cache-line costs these calls are shaped by.

// useCAS16 is hotpath.HasCAS16; tests turn it off to run the locked path.
var useCAS16 = hotpath.HasCAS16

func (l *Limiter) cas(old0, old1, new0, new1 uint64) bool {
	if useCAS16 {
		return hotpath.CAS128(l.pair(), old0, old1, new0, new1)
	}
	return l.casLocked(old0, old1, new0, new1)
}

func (l *Limiter) load128() (uint64, uint64) {
	if useCAS16 {
		return hotpath.Load128(l.pair())
	}
	return l.load128Locked()
}

func (l *Limiter) load0() uint64 { return atomic.LoadUint64(&l.pair()[0]) }
func (l *Limiter) load1() uint64 { return atomic.LoadUint64(&l.pair()[1]) }

// pair is the two state words, 16-byte aligned (see hotpath.Pair16), found
// from unsafe.Pointer(l), not &l.words: words is the first field, and
// taking its address would nil-check l with a load from the state's line.
func (l *Limiter) pair() *[2]uint64 { return hotpath.Pair16(unsafe.Pointer(l)) }

// casLocked is the two-word CAS made atomic by a lock, where the CPU has no
// 16-byte CAS. Loads stay lock-free (atomic per word): a torn pair fails
// the comparison here.
func (l *Limiter) casLocked(old0, old1, new0, new1 uint64) bool {
	l.guard.Lock()
	defer l.guard.Unlock()
	if atomic.LoadUint64(&l.pair()[0]) != old0 || atomic.LoadUint64(&l.pair()[1]) != old1 {
		return false
	}
	atomic.StoreUint64(&l.pair()[0], new0)
	atomic.StoreUint64(&l.pair()[1], new1)
	return true
}

func (l *Limiter) load128Locked() (uint64, uint64) {
	l.guard.Lock()
	defer l.guard.Unlock()
	return atomic.LoadUint64(&l.pair()[0]), atomic.LoadUint64(&l.pair()[1])
}
