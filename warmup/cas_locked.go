package warmup

import "sync/atomic"

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
