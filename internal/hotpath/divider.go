package hotpath

import (
	"math"
	"math/bits"
)

// Divider divides by a fixed d with one multiplication: q = hi(n*m) with
// m = floor((2^64-1)/d) is floor(n/d) or one less for every n < 2^63 (the
// error of n*m/2^64 is below n(d+1)/(d*2^64) < 1), and the remainder test
// corrects it. A hardware division costs several times more.
type Divider struct{ d, m uint64 }

// NewDivider returns a Divider by d (> 0).
func NewDivider(d uint64) Divider { return Divider{d: d, m: math.MaxUint64 / d} }

// Div is n / d.
func (v Divider) Div(n uint64) uint64 {
	q, _ := bits.Mul64(n, v.m)
	if n-q*v.d >= v.d {
		q++
	}
	return q
}

// Mod is n % d.
func (v Divider) Mod(n uint64) uint64 {
	if n >= 1<<63 { // outside Div's range: rare (a clock before its origin)
		return n % v.d
	}
	return n - v.Div(n)*v.d
}
