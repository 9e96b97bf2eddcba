package hotpath

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// Objects of an odd and of an even word count, with the field to place
// at several offsets.
type odd struct {
	a, b, c uint64
	w       [2]uint64
}

type even struct {
	a, b, c uint64
	w       [2]uint64
	d       uint64
}

func TestLineAligned(t *testing.T) {
	for range 64 {
		o := LineAligned[odd](unsafe.Offsetof(odd{}.w))
		if addr := uintptr(unsafe.Pointer(&o.w)); addr%CacheLine != 0 {
			t.Fatalf("odd: field at %#x, want %d-byte aligned", addr, CacheLine)
		}
		e := LineAligned[even](unsafe.Offsetof(even{}.c))
		if addr := uintptr(unsafe.Pointer(&e.c)); addr%CacheLine != 0 {
			t.Fatalf("even: field at %#x, want %d-byte aligned", addr, CacheLine)
		}
		if *o != (odd{}) || *e != (even{}) {
			t.Fatal("not zero")
		}
	}
}

func TestLaneCount(t *testing.T) {
	for _, c := range []struct{ procs, max, want int }{
		{1, 16, 2}, {2, 16, 4}, {3, 16, 8}, {8, 16, 16}, {64, 16, 16}, {0, 16, 1},
	} {
		if got := LaneCount(c.procs, c.max); got != c.want {
			t.Errorf("LaneCount(%d, %d): got %d, want %d", c.procs, c.max, got, c.want)
		}
	}
}

func TestPair16(t *testing.T) {
	for range 16 {
		w := new([3]uint64)
		p := Pair16(unsafe.Pointer(w))
		if addr := uintptr(unsafe.Pointer(p)); addr%16 != 0 {
			t.Fatalf("pair at %#x, want 16-byte aligned", addr)
		}
		if base := uintptr(unsafe.Pointer(w)); uintptr(unsafe.Pointer(&p[1]))+8 > base+24 {
			t.Fatal("pair runs past the three words")
		}
	}
}

// TestCAS128 runs the 16-byte CAS from several goroutines, each adding one
// to both words; the words must end equal to the number of adds.
func TestCAS128(t *testing.T) {
	if !HasCAS16 {
		t.Skip("no CMPXCHG16B on this CPU")
	}
	w := new([3]uint64)
	p := Pair16(unsafe.Pointer(w))
	if CAS128(p, 1, 0, 2, 2) {
		t.Fatal("CAS succeeded on a wrong old value")
	}
	const goroutines, adds = 4, 2000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range adds {
				for {
					a, b := LoadForWrite(p)
					if CAS128(p, a, b, a+1, b+1) {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	a, b := Load128(p)
	if a != goroutines*adds || b != goroutines*adds {
		t.Fatalf("got %d, %d, want %d each", a, b, goroutines*adds)
	}
}

func TestStoreUnpublished32(t *testing.T) {
	var w atomic.Uint32
	StoreUnpublished32(&w, 7)
	if got := w.Load(); got != 7 {
		t.Fatalf("got %d, want 7", got)
	}
}

// TestDivider checks the multiply-and-correct division against the
// hardware's, at the edges and on random values.
func TestDivider(t *testing.T) {
	ds := []uint64{1, 2, 3, 7, 10, 1000, 100_000_000, 1<<32 + 1, 1<<62 + 3, math.MaxInt64}
	ns := []uint64{0, 1, 2, 9, 10, 11, 99_999_999, 100_000_000, 1 << 40, math.MaxInt64 - 1, math.MaxInt64, 1 << 63, math.MaxUint64}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ns = append(ns, r.Uint64N(math.MaxInt64))
		ds = append(ds, 1+r.Uint64N(1<<uint(1+r.IntN(62))))
	}
	for _, d := range ds {
		v := NewDivider(d)
		for _, n := range ns {
			if q, m := v.Div(n), v.Mod(n); (n < 1<<63 && q != n/d) || m != n%d {
				t.Fatalf("%d / %d: got %d rem %d, want %d rem %d", n, d, q, m, n/d, n%d)
			}
		}
	}
}

// TestStrHasher: the same string always hashes alike; strings of every
// short length, and ones differing only in length or one byte, do not
// collide (a collision among these few would mean a broken mix).
func TestStrHasher(t *testing.T) {
	h := NewStrHasher()
	seen := map[uint64]string{}
	add := func(s string) {
		v := h.String(s)
		if v != h.String(s) {
			t.Fatalf("%q: hash not stable", s)
		}
		if o, ok := seen[v]; ok && o != s {
			t.Fatalf("%q and %q collide", o, s)
		}
		seen[v] = s
	}
	for n := 0; n <= 40; n++ {
		base := []byte(strings.Repeat("a", n))
		add(string(base))
		add(string(base) + "\x00")
		for i := range base {
			c := append([]byte(nil), base...)
			c[i] = 'b'
			add(string(c))
		}
	}
	for i := range 100_000 {
		add("u" + strconv.Itoa(i))
		add("10.0." + strconv.Itoa(i>>8) + "." + strconv.Itoa(i&255))
	}
	if h2 := NewStrHasher(); h2.String("user-1") == h.String("user-1") {
		t.Fatal("two hashers share a seed")
	}
}

// TestPrefetch: a prefetch changes nothing and does not fault, on a live
// object or on nil (a key table with no hint yet never calls it with nil,
// but an address that is not mapped must be as harmless).
func TestPrefetch(t *testing.T) {
	buf := make([]uint64, 16)
	buf[3] = 7
	Prefetch(unsafe.Pointer(&buf[3]))
	Prefetch(nil)
	if buf[3] != 7 {
		t.Fatal("a prefetch changed memory")
	}
}
