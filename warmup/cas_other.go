//go:build !amd64

package warmup

import (
	"sync"
	"sync/atomic"
)

// casGuard makes the two-word CAS atomic with a lock where the CPU has no
// 16-byte CAS we use. Loads stay lock-free: a torn pair fails the CAS.
type casGuard struct{ mu sync.Mutex }

func (l *Limiter) cas(old0, old1, new0, new1 uint64) bool {
	l.guard.mu.Lock()
	defer l.guard.mu.Unlock()
	if atomic.LoadUint64(&l.pair[0]) != old0 || atomic.LoadUint64(&l.pair[1]) != old1 {
		return false
	}
	atomic.StoreUint64(&l.pair[0], new0)
	atomic.StoreUint64(&l.pair[1], new1)
	return true
}

func (l *Limiter) load0() uint64 { return atomic.LoadUint64(&l.pair[0]) }
func (l *Limiter) load1() uint64 { return atomic.LoadUint64(&l.pair[1]) }

func (l *Limiter) load128() (uint64, uint64) {
	l.guard.mu.Lock()
	defer l.guard.mu.Unlock()
	return l.pair[0], l.pair[1]
}
