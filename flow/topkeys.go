package flow

import (
	"hash/maphash"
	"sort"
	"sync"
)

// spaceSaving is the Space-Saving heavy-hitters summary (Metwally, Agrawal
// and El Abbadi, "Efficient Computation of Frequent and Top-k Elements in
// Data Streams", 2005): at most k counters; a key not counted takes over the
// smallest counter and inherits its count as its possible overestimate. Any
// key seen more than N/k times in a stream of N is guaranteed a counter, and
// every count is at most err above the truth. Memory is fixed by k.
//
// The counters sit in slots, indexed by key; a min-heap of slot numbers
// orders them by count, and each slot remembers its heap position, so an
// update is O(log k) with one map lookup (heap moves touch no map) and
// never allocates once k keys have been seen (the map keeps its buckets
// when cleared).
type spaceSaving struct {
	k     int
	idx   map[string]int32 // key -> slot
	slots []ssCounter
	heap  []int32 // slots, min-heap on count
}

type ssCounter struct {
	key        string
	count, err uint64
	pos        int32 // in heap
}

func newSpaceSaving(k int) *spaceSaving {
	return &spaceSaving{k: k, idx: make(map[string]int32, k), slots: make([]ssCounter, 0, k), heap: make([]int32, 0, k)}
}

// add counts w occurrences of key.
func (s *spaceSaving) add(key string, w uint64) {
	if i, ok := s.idx[key]; ok {
		s.slots[i].count += w
		s.down(int(s.slots[i].pos))
		return
	}
	if len(s.slots) < s.k {
		i := int32(len(s.slots))
		s.slots = append(s.slots, ssCounter{key: key, count: w, pos: i})
		s.heap = append(s.heap, i)
		s.idx[key] = i
		s.up(int(i))
		return
	}
	// Take over the smallest counter: the newcomer may have been counted
	// there before it was evicted, so its count is at most min too high.
	i := s.heap[0]
	min := s.slots[i].count
	delete(s.idx, s.slots[i].key)
	s.slots[i] = ssCounter{key: key, count: min + w, err: min, pos: 0}
	s.idx[key] = i
	s.down(0)
}

// count is key's counter (zero when not held).
func (s *spaceSaving) count(key string) ssCounter {
	if i, ok := s.idx[key]; ok {
		return s.slots[i]
	}
	return ssCounter{}
}

// remove forgets key (a reset key starts from nothing).
func (s *spaceSaving) remove(key string) {
	i, ok := s.idx[key]
	if !ok {
		return
	}
	delete(s.idx, key)
	// Out of the heap: its last element fills the hole.
	p, last := int(s.slots[i].pos), len(s.heap)-1
	s.heap[p] = s.heap[last]
	s.slots[s.heap[p]].pos = int32(p)
	s.heap = s.heap[:last]
	if p < last {
		s.down(p)
		s.up(p)
	}
	// Out of the slots: the last slot moves into its place.
	if ls := int32(len(s.slots) - 1); i != ls {
		s.slots[i] = s.slots[ls]
		s.idx[s.slots[i].key] = i
		s.heap[s.slots[i].pos] = i
	}
	s.slots[len(s.slots)-1] = ssCounter{}
	s.slots = s.slots[:len(s.slots)-1]
}

func (s *spaceSaving) reset() {
	clear(s.idx)
	clear(s.slots) // drop the key strings
	s.slots, s.heap = s.slots[:0], s.heap[:0]
}

func (s *spaceSaving) less(a, b int) bool {
	return s.slots[s.heap[a]].count < s.slots[s.heap[b]].count
}

func (s *spaceSaving) swap(a, b int) {
	s.heap[a], s.heap[b] = s.heap[b], s.heap[a]
	s.slots[s.heap[a]].pos = int32(a)
	s.slots[s.heap[b]].pos = int32(b)
}

func (s *spaceSaving) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *spaceSaving) down(i int) {
	n := len(s.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && s.less(r, l) {
			c = r
		}
		if !s.less(c, i) {
			return
		}
		s.swap(i, c)
		i = c
	}
}

// KeyCount is one key of a TopKeys report.
type KeyCount struct {
	Key string
	// Refused counts the key's refusals in the report's span; it may be
	// up to MaxError too high (never too low) for a key that entered the
	// summary by taking over another key's counter.
	Refused  uint64
	MaxError uint64
}

// topShards splits a rule's summary by key hash, so refusals of different
// keys rarely contend on one lock. Each key lives in exactly one shard, so
// the union of the shards is a valid summary of the whole stream.
const topShards = 8

// topKeys records the refused keys of one user or ip rule over the last
// window: two summaries per shard, the current window and the one before,
// swapped when a window ends (no goroutine: the first refusal after the end
// swaps them).
type topKeys struct {
	seed    maphash.Seed
	window  int64
	created int64 // the first refusal: no history before it
	shards  [topShards]topShard
}

type topShard struct {
	mu       sync.Mutex
	start    int64 // start of cur's window
	cur, old *spaceSaving
	_        [32]byte // keep neighbouring shard locks off one cache line
}

func newTopKeys(perShard int, window int64, now int64) *topKeys {
	t := &topKeys{seed: maphash.MakeSeed(), window: window, created: now}
	for i := range t.shards {
		s := &t.shards[i]
		s.start, s.cur, s.old = now, newSpaceSaving(perShard), newSpaceSaving(perShard)
	}
	return t
}

func (t *topKeys) shard(key string) *topShard {
	return &t.shards[maphash.String(t.seed, key)%topShards]
}

// rotate moves s to the window holding now. Under s.mu.
func (t *topKeys) rotate(s *topShard, now int64) {
	if now-s.start < t.window {
		return
	}
	s.old, s.cur = s.cur, s.old
	s.cur.reset()
	if now-s.start >= 2*t.window {
		s.old.reset() // a whole window passed without a refusal here
	}
	s.start += (now - s.start) / t.window * t.window
}

// record counts one refusal of key at now.
func (t *topKeys) record(key string, now int64) {
	s := t.shard(key)
	s.mu.Lock()
	t.rotate(s, now)
	s.cur.add(key, 1)
	s.mu.Unlock()
}

// forget drops key from the summaries.
func (t *topKeys) forget(key string) {
	s := t.shard(key)
	s.mu.Lock()
	s.cur.remove(key)
	s.old.remove(key)
	s.mu.Unlock()
}

// top returns the n keys refused most in the current and previous windows
// (between one and two windows of history), largest first.
func (t *topKeys) top(n int, now int64) []KeyCount {
	var all []KeyCount
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		t.rotate(s, now)
		merged := make(map[string]KeyCount, len(s.cur.slots)+len(s.old.slots))
		for _, sum := range [2]*spaceSaving{s.old, s.cur} {
			for _, c := range sum.slots {
				kc := merged[c.key]
				kc.Key, kc.Refused, kc.MaxError = c.key, kc.Refused+c.count, kc.MaxError+c.err
				merged[c.key] = kc
			}
		}
		s.mu.Unlock()
		for _, kc := range merged {
			all = append(all, kc)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Refused != all[j].Refused {
			return all[i].Refused > all[j].Refused
		}
		return all[i].Key < all[j].Key
	})
	if n >= 0 && len(all) > n {
		all = all[:n]
	}
	return all
}

// refusedOf is key's count in top's summaries (0 when not tracked).
func (t *topKeys) refusedOf(key string, now int64) uint64 {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	t.rotate(s, now)
	var n uint64
	for _, sum := range [2]*spaceSaving{s.old, s.cur} {
		n += sum.count(key).count
	}
	return n
}
