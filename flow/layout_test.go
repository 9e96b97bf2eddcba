package flow

import (
	"testing"
	"unsafe"
)

// TestShardSize: a key table's shards are laid side by side in one slice;
// each must fill whole cache lines, or two shards' locks share a line and
// calls for keys of different shards contend anyway.
func TestShardSize(t *testing.T) {
	if n := unsafe.Sizeof(keyShard{}); n%64 != 0 {
		t.Fatalf("keyShard is %d B, want a multiple of 64", n)
	}
}

// TestKeyRecordSize: a key's record is its entry, its token bucket if any,
// and its hash in at most 128 bytes (two cache lines) or 32, as the entry and the
// bucket allocated from the heap took, so that records packed in chunks
// cost no more memory per key; entry first and hash last (keyRecords reads
// both kinds through one accessor).
func TestKeyRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(keyRecBucket{}); n > 128 {
		t.Fatalf("keyRecBucket is %d B, want <= 128", n)
	}
	if n := unsafe.Sizeof(keyRecPlain{}); n != 32 {
		t.Fatalf("keyRecPlain is %d B, want 32", n)
	}
	if unsafe.Offsetof(keyRecBucket{}.h) != unsafe.Sizeof(keyRecBucket{})-8 || unsafe.Offsetof(keyRecPlain{}.h) != 24 {
		t.Fatal("a record's hash is not its last word")
	}
}

// TestKeyRecordsLine: what every lookup reads of a table's records fills
// one cache line, apart from what handing records out writes.
func TestKeyRecordsLine(t *testing.T) {
	if off := unsafe.Offsetof(keyRecords{}.mu); off != 64 || unsafe.Offsetof(keyRecords{}.bucket) >= off {
		t.Fatalf("keyRecords: mu at %d, want 64, after the fields lookups read", off)
	}
	r := newKeyRecords(10, true)
	if uintptr(unsafe.Pointer(r))%64 != 0 {
		t.Fatal("keyRecords does not start a cache line")
	}
}
