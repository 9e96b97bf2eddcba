package keytab

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestIndexAgainstMap runs random sets, deletes, sweeps and samples on an
// index whose hashes crowd a few homes (long runs of probes, some wrapping
// past the table's end) and checks it against a Go map after each step.
func TestIndexAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 31))
	var x index[val]
	ref := map[uint64]*entry[val]{}
	// Homes are bits 32 and up: put most hashes on the last few homes of
	// any table size, so runs wrap around to slot 0.
	hash := func() uint64 {
		return uint64(rng.IntN(300)) | uint64(1<<31-rng.IntN(4))<<32 | uint64(rng.IntN(3))<<56
	}
	check := func(step int) {
		t.Helper()
		if x.n != len(ref) {
			t.Fatalf("step %d: %d slots in use, want %d", step, x.n, len(ref))
		}
		for h, e := range ref {
			if got := x.get(h); got != e {
				t.Fatalf("step %d: get(%#x) = %p, want %p", step, h, got, e)
			}
		}
		if 4*x.n > 3*len(x.slots) || len(x.ptrs)-len(x.free) != x.n {
			t.Fatalf("step %d: %d of %d slots in use, %d numbers of %d free", step, x.n, len(x.slots), len(x.free), len(x.ptrs))
		}
	}
	for step := range 20000 {
		h := hash()
		switch op := rng.IntN(10); {
		case op < 5:
			e := &entry[val]{last: int64(step)}
			if ref[h] != nil {
				x.replace(h, e)
			} else if !x.add(h, e) {
				t.Fatalf("step %d: add refused", step)
			}
			ref[h] = e
		case op < 9:
			x.delete(h)
			delete(ref, h)
		case step%50 == 0: // a sweep of about a third of the entries
			x.sweep(func(e *entry[val]) bool { return e.last%3 == 0 })
			for h, e := range ref {
				if e.last%3 == 0 {
					delete(ref, h)
				}
			}
		default: // a sample visits entries of the index, each once
			seen := map[uint64]bool{}
			x.sample(func(h uint64, e *entry[val]) bool {
				if ref[h] != e || seen[h] {
					t.Fatalf("step %d: sample gave %#x twice or not held", step, h)
				}
				seen[h] = true
				return len(seen) < 7
			})
			if len(seen) != min(7, len(ref)) {
				t.Fatalf("step %d: sample saw %d of %d", step, len(seen), len(ref))
			}
		}
		if x.get(h) != ref[h] {
			t.Fatalf("step %d: get(%#x) wrong after the step", step, h)
		}
		if step%97 == 0 {
			check(step)
		}
	}
	check(-1)
}

// TestEntrySize: with a value of 56 bytes (flow's for a token-bucket
// rule, TestBucketKeySize there) an entry fills 128 bytes exactly, a size
// class the allocator aligns on 128 bytes.
func TestEntrySize(t *testing.T) {
	if n := reflect.TypeFor[entry[[7]int64]]().Size(); n != 128 {
		t.Fatalf("an entry of a 56-byte value is %d B, want 128", n)
	}
}

// TestInlineAndLongKeys: keys on both sides of inlineKey, keys one byte
// apart in length, and keys differing only past the inline length (or only
// in their last byte) each have a value of their own, found again, listed
// by Each, and forgotten alone.
func TestInlineAndLongKeys(t *testing.T) {
	at := strings.Repeat("k", inlineKey)
	keys := []string{
		"", "a", at[:inlineKey-1], at, at + "k", at + "x", at + "kk",
		at[:inlineKey-1] + "x", strings.Repeat("z", 60) + "1", strings.Repeat("z", 60) + "2",
		strings.Repeat("L", longKey), strings.Repeat("L", longKey+1),
	}
	for _, hg := range hashings {
		t.Run(hg.name, func(t *testing.T) {
			tb := newTable(100, time.Hour, hg.hash)
			serial := 0
			got := map[string]*val{}
			for _, k := range keys {
				got[k] = get(t, tb, k, 1, &serial)
			}
			for _, k := range keys {
				if v := get(t, tb, k, 2, &serial); v != got[k] {
					t.Fatalf("key of %d bytes: a second Get found another value", len(k))
				}
			}
			if tb.Len() != len(keys) || serial != len(keys) {
				t.Fatalf("%d keys held, %d values made, want %d", tb.Len(), serial, len(keys))
			}
			n := 0
			tb.Each(func(v *val) {
				if v != got[v.key] {
					t.Fatalf("Each: a value of a key of %d bytes not the one held", len(v.key))
				}
				n++
			})
			if n != len(keys) {
				t.Fatalf("Each saw %d values, want %d", n, len(keys))
			}
			for i, k := range keys {
				if !tb.Forget(k) || tb.Peek(k, 2) != nil {
					t.Fatalf("key of %d bytes not forgotten", len(k))
				}
				for _, other := range keys[i+1:] {
					if tb.Peek(other, 2) != got[other] {
						t.Fatalf("forgetting a key of %d bytes lost one of %d", len(k), len(other))
					}
				}
			}
		})
	}
}

// TestLongKeysEvictAndIdle: long keys, held in spill only, are evicted and
// forgotten when idle as short ones are, and come back with a new value.
func TestLongKeysEvictAndIdle(t *testing.T) {
	long := func(c string) string { return strings.Repeat(c, inlineKey+1) }
	tb := New[val](3, 100)
	serial := 0
	a := get(t, tb, long("a"), 1, &serial)
	get(t, tb, "b", 2, &serial)
	get(t, tb, long("c"), 3, &serial)
	get(t, tb, long("d"), 4, &serial) // evicts long("a"), the least recently used
	if tb.Peek(long("a"), 5) != nil || tb.Len() != 3 {
		t.Fatalf("the least recently used long key still held (%d keys)", tb.Len())
	}
	if v := get(t, tb, long("a"), 6, &serial); v == a || v.n != 5 { // evicts b
		t.Fatalf("a long key came back as value %d, want a new one (5)", v.n)
	}
	c := tb.Peek(long("c"), 6)
	if nc := get(t, tb, long("c"), 200, &serial); nc == c || c.key != long("c") {
		t.Fatal("a long key idle past the TTL kept its value")
	}
	tb.SweepAll(300) // all but long("c"), used at 200, are idle
	if tb.Len() != 1 || tb.Peek(long("c"), 300) == nil {
		t.Fatalf("after SweepAll: %d keys, want long(c) alone", tb.Len())
	}
}

// TestNumberReuse: a key forgotten frees its number, which the next key
// admitted takes; the forgotten key's holder keeps its own value, and
// neither key finds the other's.
func TestNumberReuse(t *testing.T) {
	tb := New[val](10, 0)
	serial := 0
	a := get(t, tb, "a", 1, &serial)
	tb.Forget("a")
	b := get(t, tb, "b", 2, &serial)
	if s := &tb.shards[0]; len(s.byHash.ptrs) != 1 || s.byHash.ptrs[0] == nil || &s.byHash.ptrs[0].val != b {
		t.Fatal("b did not take a's freed number")
	}
	a2 := get(t, tb, "a", 3, &serial)
	if a2 == a || a2 == b || a.key != "a" || a.n != 1 || tb.Peek("b", 3) != b {
		t.Fatalf("after reuse: a's old value %+v, new %p, b %p", *a, a2, b)
	}
}

// TestFullIndexSpills: a short key admitted when its shard's index has
// handed out all its numbers goes to spill, the Go map by key, and is
// found, kept apart, evicted and forgotten there like any other; a number
// freed in the index is taken again by the next key.
func TestFullIndexSpills(t *testing.T) {
	for _, hg := range hashings {
		t.Run(hg.name, func(t *testing.T) {
			tb := newTable(1000, time.Minute, hg.hash)
			for i := range tb.shards {
				tb.shards[i].byHash.most = 3
			}
			serial := 0
			const n = 20
			got := make([]*val, n)
			for i := range got {
				got[i] = get(t, tb, "k"+strconv.Itoa(i), 1, &serial)
			}
			inIndex, inSpill := 0, 0
			for i := range tb.shards {
				inIndex += tb.shards[i].byHash.n
				inSpill += len(tb.shards[i].spill)
			}
			if inIndex > 3*len(tb.shards) || inSpill < n-3*len(tb.shards) || inIndex+inSpill != n {
				t.Fatalf("%d keys in the indexes (at most 3 each), %d in spill, want %d in all", inIndex, inSpill, n)
			}
			for i, v := range got {
				if again := get(t, tb, "k"+strconv.Itoa(i), 2, &serial); again != v {
					t.Fatalf("k%d: a second Get found another value", i)
				}
			}
			// Forget every key, then admit them again: each gets a new
			// value, none an old one, and the index's freed numbers are
			// used again (it never holds more than 3 numbers).
			for i := range got {
				if !tb.Forget("k" + strconv.Itoa(i)) {
					t.Fatalf("k%d not held", i)
				}
			}
			for i := range got {
				if v := get(t, tb, "k"+strconv.Itoa(i), 3, &serial); v == got[i] {
					t.Fatalf("k%d came back with its forgotten value", i)
				}
			}
			for i := range tb.shards {
				if x := &tb.shards[i].byHash; len(x.ptrs) > 3 {
					t.Fatalf("shard %d's index handed out %d numbers, want at most 3", i, len(x.ptrs))
				}
			}
			if tb.Len() != n {
				t.Fatalf("%d keys held, want %d", tb.Len(), n)
			}
		})
	}
}
