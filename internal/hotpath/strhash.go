package hotpath

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// StrHasher hashes short strings (user IDs, IP addresses: up to 16 bytes)
// in a few multiplications, where maphash.String costs about 60
// instructions a key through the runtime's generic hash; longer strings go
// to maphash. The short form is wyhash's: the string's first and last
// words (they overlap below 16 bytes; the length is mixed in, so "a" and
// "a\x00" differ) each xored with a secret and folded by a 64×64→128-bit
// multiplication. It mixes well (wyhash passes SMHasher), but unlike
// maphash it is not meant to resist someone who can watch the hashes:
// only the seed, random per StrHasher, hides it. Use it where a
// collision costs a shared slot, not where it opens an attack.
type StrHasher struct {
	s0, s1 uint64 // random secrets from the seed
	seed   maphash.Seed
}

// wyhash's constants: odd, with about half their bits set.
const (
	wyp0 = 0xa0761d6478bd642f
	wyp1 = 0xe7037ed1a0b428db
	wyp2 = 0x8ebc6af09c88c6e3
)

// NewStrHasher makes a hasher with a new random seed.
func NewStrHasher() StrHasher {
	seed := maphash.MakeSeed()
	return StrHasher{
		s0:   maphash.String(seed, "s0") | 1,
		s1:   maphash.String(seed, "s1") | 1,
		seed: seed,
	}
}

func wymix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// String returns s's 64-bit hash.
func (h *StrHasher) String(s string) uint64 {
	n := len(s)
	if n > 16 {
		return maphash.String(h.seed, s)
	}
	var a, b uint64
	if n > 0 {
		// Byte loads the compiler merges into one load each (checkptr
		// would refuse unaligned pointer conversions).
		p := unsafe.Slice(unsafe.StringData(s), n)
		le := binary.LittleEndian
		switch {
		case n >= 8:
			a, b = le.Uint64(p), le.Uint64(p[n-8:])
		case n >= 4:
			a = uint64(le.Uint32(p))<<32 | uint64(le.Uint32(p[n-4:]))
		default:
			a = uint64(p[0])<<16 | uint64(p[n>>1])<<8 | uint64(p[n-1])
		}
	}
	return wymix(wyp1^uint64(n), wymix(a^wyp0^h.s0, b^h.s1))
}
