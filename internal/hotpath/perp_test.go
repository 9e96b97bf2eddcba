package hotpath

import (
	"sync"
	"testing"
	"unsafe"
)

// TestPerP: a spare put on a P comes back from Get on that P, a second Put
// finds the slot full, and from many goroutines every object handed out is
// held by one goroutine at a time.
func TestPerP(t *testing.T) {
	c := NewPerP()
	if c.Get() != nil {
		t.Fatal("a new PerP has a spare")
	}
	a := new(int)
	// procPin keeps this goroutine on its P between the calls that follow
	// only by chance; a test without a runtime.LockOSThread would be no
	// stronger, so accept either outcome of a migration but never a wrong
	// object.
	if !c.Put(unsafe.Pointer(a)) {
		t.Fatal("Put on an empty slot refused")
	}
	if got := c.Get(); got != nil && got != unsafe.Pointer(a) {
		t.Fatalf("Get returned %p, want %p or nil", got, a)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	inUse := map[unsafe.Pointer]bool{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				v := c.Get()
				if v == nil {
					v = unsafe.Pointer(new(int))
				}
				mu.Lock()
				if inUse[v] {
					mu.Unlock()
					t.Error("an object handed out twice at once")
					return
				}
				inUse[v] = true
				mu.Unlock()
				mu.Lock()
				delete(inUse, v)
				mu.Unlock()
				c.Put(v)
			}
		}()
	}
	wg.Wait()
}

// TestPerPBeyondSlots: a PerP with no slot for the P (GOMAXPROCS raised
// since NewPerP) hands out nothing and keeps nothing.
func TestPerPBeyondSlots(t *testing.T) {
	var c PerP // no slots
	if c.Put(unsafe.Pointer(new(int))) {
		t.Fatal("Put kept a spare without a slot")
	}
	if c.Get() != nil {
		t.Fatal("Get returned a spare without a slot")
	}
}

// TestAddrSlot: a string's slot depends on its address alone, stays in
// range, and strings at different addresses spread over the slots.
func TestAddrSlot(t *testing.T) {
	s := "resource"
	if AddrSlot(s, 6) != AddrSlot(s[:], 6) {
		t.Fatal("same string, different slots")
	}
	seen := map[uint]bool{}
	keys := make([]string, 256) // kept, so each is on the heap at its own address
	for i := range keys {
		keys[i] = string([]byte{'r', byte(i)})
	}
	for _, k := range keys {
		slot := AddrSlot(k, 6)
		if slot >= 64 {
			t.Fatalf("slot %d out of range", slot)
		}
		seen[slot] = true
	}
	if len(seen) < 16 {
		t.Fatalf("256 strings fell in %d of 64 slots", len(seen))
	}
}

// TestNanotime: the clock does not go backwards and moves.
func TestNanotime(t *testing.T) {
	a := Nanotime()
	for b := Nanotime(); b == a; b = Nanotime() {
	}
	if b := Nanotime(); b < a {
		t.Fatalf("went backwards: %d then %d", a, b)
	}
}
