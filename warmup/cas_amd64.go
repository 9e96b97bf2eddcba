package warmup

import "sync/atomic"

// casGuard is empty: amd64 has CMPXCHG16B (every x86-64 CPU Go supports
// from GOAMD64=v2 on, and in practice all in service).
type casGuard struct{}

//go:noescape
func cas128(addr *[2]uint64, old0, old1, new0, new1 uint64) bool

//go:noescape
func load128(addr *[2]uint64) (w0, w1 uint64)

func (l *Limiter) cas(old0, old1, new0, new1 uint64) bool {
	return cas128(l.pair, old0, old1, new0, new1)
}

func (l *Limiter) load0() uint64             { return atomic.LoadUint64(&l.pair[0]) }
func (l *Limiter) load1() uint64             { return atomic.LoadUint64(&l.pair[1]) }
func (l *Limiter) load128() (uint64, uint64) { return load128(l.pair) }
