//go:build !amd64

package warmup

import "sync/atomic"

// useCAS16 is false: no 16-byte CAS is used on this architecture.
var useCAS16 = false

func (l *Limiter) cas(old0, old1, new0, new1 uint64) bool {
	return l.casLocked(old0, old1, new0, new1)
}

func (l *Limiter) load128() (uint64, uint64) { return l.load128Locked() }

func (l *Limiter) loadW() (uint64, uint64) { return l.load0(), l.load1() }

func (l *Limiter) load0() uint64 { return atomic.LoadUint64(&l.pair()[0]) }
func (l *Limiter) load1() uint64 { return atomic.LoadUint64(&l.pair()[1]) }
