package flow

import (
	"math/rand/v2"
	"testing"
)

// TestKeyMapMatchesMap: random puts, deletes, lookups and sweeps on a
// keyMap and on a Go map agree, with hashes crowded into few home slots so
// that runs wrap around the table's end and deletions shift entries back.
func TestKeyMapMatchesMap(t *testing.T) {
	for _, spread := range []uint64{4, 64, 1 << 20} {
		rng := rand.New(rand.NewPCG(1, spread))
		const capacity = 200
		var m keyMap
		m.limitTo(capacity)
		recs := newKeyRecords(capacity, spread != 4) // both record kinds
		recs.tagMask = 0xff000000                    // 4 tags in use below: matches the full hash refuses
		ref := map[uint64]*keyEntry{}
		hash := func() uint64 {
			// Few distinct high bits (home slots), varied low bits; 0
			// too, but never 1, which 0 is stored as.
			h := rng.Uint64N(spread)<<40 | rng.Uint64N(4)<<24 | rng.Uint64N(8)
			if h == 1 {
				h = 0
			}
			return h
		}
		for op := range 20000 {
			h := hash()
			switch r := rng.IntN(10); {
			case r < 5:
				if _, ok := ref[h]; !ok && len(ref) < capacity {
					en, _ := m.add(recs, h)
					en.last = uint32(op)
					ref[h] = en
				}
			case r < 8:
				_, ok := ref[h]
				if got := m.del(recs, h); got != ok {
					t.Fatalf("spread %d op %d: del(%x) = %v, want %v", spread, op, h, got, ok)
				}
				delete(ref, h)
			case r < 9:
				cut := uint32(rng.IntN(op + 1))
				m.sweep(recs, func(en *keyEntry) bool { return en.last < cut })
				for k, en := range ref {
					if en.last < cut {
						delete(ref, k)
					}
				}
			default:
				seen := 0
				m.sample(recs, rng.Uint64(), evictSamples, func(k uint64, en *keyEntry) bool {
					if ref[k] != en && !(k == 1 && ref[0] == en) {
						t.Fatalf("spread %d op %d: sample gave %x, not held", spread, op, k)
					}
					seen++
					return true
				})
				if want := min(evictSamples, len(ref)); seen != want {
					t.Fatalf("spread %d op %d: sampled %d, want %d", spread, op, seen, want)
				}
			}
			if int(m.n) != len(ref) {
				t.Fatalf("spread %d op %d: %d held, want %d", spread, op, m.n, len(ref))
			}
			if got, want := m.get(recs, h), ref[h]; got != want {
				t.Fatalf("spread %d op %d: get(%x) = %p, want %p", spread, op, h, got, want)
			}
		}
		for k, en := range ref {
			if m.get(recs, k) != en {
				t.Fatalf("spread %d: %x lost", spread, k)
			}
		}
		n := 0
		m.each(recs, func(*keyEntry) { n++ })
		if n != len(ref) {
			t.Fatalf("spread %d: each saw %d, want %d", spread, n, len(ref))
		}
		if limit := 1 << m.maxLog2; len(m.slots) > limit || capacity*8 > limit*7 {
			t.Fatalf("spread %d: %d slots, limit %d for capacity %d", spread, len(m.slots), limit, capacity)
		}
	}
}
