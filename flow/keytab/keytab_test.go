package keytab

import (
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"
)

// val is the value the tests keep per key: the key it was made for, and
// a serial number telling one creation from another.
type val struct {
	key string
	n   int
}

// maker returns an init func that records key and numbers its values.
func maker(key string, serial *int) func(*val) error {
	return func(v *val) error {
		*serial++
		*v = val{key: key, n: *serial}
		return nil
	}
}

// hashings are the shard hashes the tests run under: the table's own, one
// hash for every key (all but the first key of a shard go to its spill
// map), and three hashes (keys in both maps).
var hashings = []struct {
	name string
	hash func(string) uint64
}{
	{"maphash", nil},
	{"one hash", func(string) uint64 { return 42 }},
	{"three hashes", func(k string) uint64 { return uint64(len(k)+int(lastByte(k))) % 3 }},
}

// lastByte is k's last byte, 0 for "".
func lastByte(k string) byte {
	if k == "" {
		return 0
	}
	return k[len(k)-1]
}

// newTable is New with the shard hash replaced by hash (nil: maphash).
func newTable(maxKeys int, ttl time.Duration, hash func(string) uint64) *Table[val] {
	tb := New[val](maxKeys, ttl)
	tb.hash = hash
	return tb
}

func get(t *testing.T, tb *Table[val], key string, now int64, serial *int) *val {
	t.Helper()
	v, err := tb.Get(key, now, maker(key, serial))
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if v.key != key {
		t.Fatalf("Get(%q) returned the value of %q", key, v.key)
	}
	return v
}

func TestSharesSumToMaxKeys(t *testing.T) {
	for _, maxKeys := range []int{0, 1, 7, 2047, 2048, 4096, 100000, 1 << 20} {
		tb := New[val](maxKeys, 0)
		sum := 0
		for i := range tb.shards {
			sum += tb.shards[i].capacity
		}
		if sum != maxKeys || len(tb.shards) > maxShards || len(tb.shards)&(len(tb.shards)-1) != 0 {
			t.Fatalf("MaxKeys %d: %d shards hold %d", maxKeys, len(tb.shards), sum)
		}
	}
}

// TestShardSize: shards lie side by side in one slice; each must fill a
// cache line, or two shards' locks share one.
func TestShardSize(t *testing.T) {
	if n := reflect.TypeFor[shard[val]]().Size(); n != 128 {
		t.Fatalf("a shard is %d B, want 128", n)
	}
}

// TestBound: however many distinct keys come, the table holds at most
// MaxKeys, and close to it once full.
func TestBound(t *testing.T) {
	for _, hg := range hashings {
		t.Run(hg.name, func(t *testing.T) {
			for _, maxKeys := range []int{1, 5, 100, 5000, 40000} {
				tb := newTable(maxKeys, time.Hour, hg.hash)
				serial := 0
				for i := range 3 * maxKeys {
					get(t, tb, "k"+strconv.Itoa(i), int64(i), &serial)
					if i%97 != 0 {
						continue
					}
					if n := tb.Len(); n > maxKeys {
						t.Fatalf("MaxKeys %d: %d keys held after %d", maxKeys, n, i+1)
					}
				}
				// Near the bound, or near the capacity of the shards the
				// keys fall in when forced onto few hashes.
				room, used := 0, map[uint64]bool{}
				for i := range 3 * maxKeys {
					if j := tb.hashOf("k"+strconv.Itoa(i)) & tb.mask; !used[j] {
						used[j] = true
						room += tb.shards[j].capacity
					}
				}
				if n := tb.Len(); n < room*9/10 {
					t.Fatalf("MaxKeys %d: %d keys held after %d, want near %d", maxKeys, n, 3*maxKeys, room)
				}
			}
		})
	}
}

// TestEvictionOrder: a shard of no more than evictSamples keys evicts the
// least recently used one exactly, and a key used again is recent.
func TestEvictionOrder(t *testing.T) {
	for _, hg := range hashings {
		t.Run(hg.name, func(t *testing.T) {
			tb := newTable(3, time.Hour, hg.hash)
			serial := 0
			a := get(t, tb, "a", 1, &serial)
			get(t, tb, "b", 2, &serial)
			get(t, tb, "c", 3, &serial)
			if get(t, tb, "a", 4, &serial) != a {
				t.Fatal("a known key got a new value")
			}
			get(t, tb, "d", 5, &serial) // evicts b
			for _, k := range []string{"a", "c", "d"} {
				if tb.Peek(k, 6) == nil {
					t.Fatalf("%s evicted, want b evicted", k)
				}
			}
			if tb.Peek("b", 6) != nil || tb.Len() != 3 {
				t.Fatalf("b still held (%d keys)", tb.Len())
			}
			if b := get(t, tb, "b", 7, &serial); b.n != 5 { // evicts c
				t.Fatalf("b came back as value %d, want a new one (5)", b.n)
			}
			if tb.Peek("c", 8) != nil {
				t.Fatal("c held, want it evicted as least recently used")
			}
		})
	}
}

// TestEvictionDropsIdle: a full shard admitting a key drops every idle key
// of its sample, not only one.
func TestEvictionDropsIdle(t *testing.T) {
	for _, hg := range hashings {
		t.Run(hg.name, func(t *testing.T) {
			const ttl = 100
			tb := newTable(4, ttl, hg.hash)
			serial := 0
			get(t, tb, "a", 0, &serial)
			get(t, tb, "b", 10, &serial)
			get(t, tb, "c", 90, &serial)
			get(t, tb, "d", 95, &serial)
			tb.shards[0].lastSweep = 150  // no periodic sweep: eviction alone
			get(t, tb, "e", 150, &serial) // a and b idle (150 and 140 > 100)
			if n := tb.Len(); n != 3 {
				t.Fatalf("%d keys held, want 3 (c, d, e)", n)
			}
			for _, k := range []string{"c", "d", "e"} {
				if tb.Peek(k, 150) == nil {
					t.Fatalf("%s not held", k)
				}
			}
		})
	}
}

// TestIdleTTL: a key idle past the TTL is not seen, and comes back with a
// new value, while one used within it keeps its own.
func TestIdleTTL(t *testing.T) {
	for _, hg := range hashings {
		t.Run(hg.name, func(t *testing.T) {
			const ttl = int64(time.Minute)
			tb := newTable(10, time.Minute, hg.hash)
			serial := 0
			a := get(t, tb, "a", 0, &serial)
			b := get(t, tb, "b", 0, &serial)
			if get(t, tb, "a", ttl/2, &serial) != a {
				t.Fatal("a within the TTL got a new value")
			}
			if tb.Peek("b", ttl) != b || tb.Peek("b", ttl+1) != nil {
				t.Fatal("b: Peek does not see it exactly until the TTL has passed")
			}
			if tb.Peek("a", ttl+1) != a { // Peek did not age a, Get at ttl/2 did
				t.Fatal("a not seen at ttl+1 after a use at ttl/2")
			}
			if nb := get(t, tb, "b", ttl+1, &serial); nb == b || nb.n != 3 {
				t.Fatalf("b after the TTL: value %d, want a new one (3)", nb.n)
			}
			if b.key != "b" || b.n != 2 {
				t.Fatalf("the old value of b changed: %+v", *b)
			}
		})
	}
}

// TestSweep: SweepAll forgets idle keys at once, and a shard admitting a
// key sweeps its idle keys when a sweepDiv-th of the TTL has passed since
// it last did.
func TestSweep(t *testing.T) {
	for _, hg := range hashings {
		t.Run(hg.name, func(t *testing.T) {
			const ttl = 400
			tb := newTable(100, ttl, hg.hash)
			serial := 0
			for i := range 10 {
				get(t, tb, "k"+strconv.Itoa(i), int64(i*10), &serial) // k0 at 0 ... k9 at 90
			}
			tb.SweepAll(450) // k0..k4 idle (450-40 > 400)
			if n := tb.Len(); n != 5 {
				t.Fatalf("after SweepAll: %d keys, want 5", n)
			}
			get(t, tb, "new", 450+ttl/sweepDiv-1, &serial) // too soon after SweepAll: no sweep
			if n := tb.Len(); n != 6 {
				t.Fatalf("a key admitted before the sweep is due: %d keys, want 6", n)
			}
			get(t, tb, "late", 900, &serial) // due: all but "new" and "late" are idle
			if n := tb.Len(); n != 2 {
				t.Fatalf("a key admitted when the sweep is due: %d keys, want 2", n)
			}
		})
	}
}

// TestKeyIdentity: with the shard hash forced equal for every key, keys
// are still told apart by value: each has a value of its own, found again
// by a later Get, and forgetting one leaves the others.
func TestKeyIdentity(t *testing.T) {
	for _, hg := range hashings {
		t.Run(hg.name, func(t *testing.T) {
			tb := newTable(1<<20, 0, hg.hash)
			serial := 0
			const n = 5000
			got := make([]*val, n)
			for i := range got {
				got[i] = get(t, tb, "user-"+strconv.Itoa(i), 1, &serial)
			}
			if tb.Len() != n {
				t.Fatalf("%d keys held, want %d", tb.Len(), n)
			}
			seen := map[*val]bool{}
			for i, v := range got {
				if seen[v] {
					t.Fatalf("user-%d shares a value", i)
				}
				seen[v] = true
				if again := get(t, tb, "user-"+strconv.Itoa(i), 2, &serial); again != v {
					t.Fatalf("user-%d: a second Get found another value", i)
				}
			}
			if !tb.Forget("user-7") || tb.Forget("user-7") || tb.Peek("user-7", 2) != nil {
				t.Fatal("Forget: user-7 not forgotten exactly once")
			}
			if tb.Peek("user-8", 2) != got[8] || tb.Len() != n-1 {
				t.Fatal("forgetting user-7 changed another key")
			}
			// user-0 came first: under one hash, the one in byHash.
			tb.Forget("user-0")
			for i := 1; i < n; i++ {
				if v := tb.Peek("user-"+strconv.Itoa(i), 2); i != 7 && v != got[i] {
					t.Fatalf("user-%d lost when user-0 was forgotten", i)
				}
			}
			if v := get(t, tb, "user-0", 3, &serial); v == got[0] || tb.Len() != n-1 {
				t.Fatalf("user-0 back: the old value, or %d keys (want %d)", tb.Len(), n-1)
			}
		})
	}
}

// TestInitError: a key whose value cannot be made is not admitted.
func TestInitError(t *testing.T) {
	tb := New[val](4, 0)
	bad := errors.New("bad")
	if _, err := tb.Get("a", 0, func(*val) error { return bad }); err != bad {
		t.Fatalf("err %v, want %v", err, bad)
	}
	if tb.Len() != 0 || tb.Peek("a", 0) != nil {
		t.Fatal("a key whose init failed is held")
	}
}

// TestNoKeys: a table of no keys gives every call a value of its own.
func TestNoKeys(t *testing.T) {
	tb := New[val](0, 0)
	serial := 0
	if a, b := get(t, tb, "a", 0, &serial), get(t, tb, "a", 0, &serial); a == b || tb.Len() != 0 {
		t.Fatalf("one value kept (%d keys)", tb.Len())
	}
}

// TestEach: Each visits the value of every key held, once.
func TestEach(t *testing.T) {
	for _, hg := range hashings {
		t.Run(hg.name, func(t *testing.T) {
			tb := newTable(2047, 0, hg.hash) // one shard
			serial := 0
			for i := range 2000 {
				get(t, tb, strconv.Itoa(i), 0, &serial)
			}
			seen := map[string]*val{}
			tb.Each(func(v *val) {
				if seen[v.key] != nil {
					t.Errorf("Each: the value of %q twice", v.key)
				}
				seen[v.key] = v
			})
			if len(seen) != 2000 {
				t.Fatalf("Each saw %d keys, want 2000", len(seen))
			}
			for k, v := range seen {
				if tb.Peek(k, 0) != v {
					t.Fatalf("Each: a value of %q not the one held", k)
				}
			}
		})
	}
}

// TestConcurrent (run with -race): goroutines admit, find, forget, sweep
// and count keys of a small table at once; every value found is its key's,
// and the table never holds more than MaxKeys.
func TestConcurrent(t *testing.T) {
	for _, hg := range hashings {
		t.Run(hg.name, func(t *testing.T) {
			const maxKeys = 3000 // 2 shards
			tb := newTable(maxKeys, 1000, hg.hash)
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 4000 {
						key := strconv.Itoa((g*7919 + i*31) % 5000)
						now := int64(i)
						switch i % 50 {
						case 0:
							tb.Forget(key)
						case 1:
							tb.SweepAll(now)
						case 2:
							if n := tb.Len(); n > maxKeys {
								t.Errorf("%d keys held, MaxKeys %d", n, maxKeys)
								return
							}
						case 3:
							if v := tb.Peek(key, now); v != nil && v.key != key {
								t.Errorf("Peek(%q) found %q's value", key, v.key)
								return
							}
						default:
							v, err := tb.Get(key, now, func(v *val) error { v.key = key; return nil })
							if err != nil || v.key != key {
								t.Errorf("Get(%q): %v, %q's value", key, err, v.key)
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			if n := tb.Len(); n > maxKeys {
				t.Fatalf("%d keys held, MaxKeys %d", n, maxKeys)
			}
		})
	}
}
