package envoyrls

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// Store holds the fixed-window counters. Incr adds each Incr's Hits to its
// counter and sets Count to the counter's value after the addition (every
// hit counts, refused ones too, as envoyproxy/ratelimit counts them). A
// counter is forgotten once its window is over. A Store is safe for
// concurrent use; Incr fails as a whole when it cannot count.
type Store interface {
	Incr(ctx context.Context, incrs []Incr) error
}

// Incr is one counter update of a request.
type Incr struct {
	Key   string // names the descriptor and its window
	Hits  uint64 // added; 0 reads the counter
	Now   int64  // Unix second of the request (the key names the window holding it)
	TTL   int64  // the unit's length in seconds: windows start at its multiples
	Count uint64 // set by Incr: the counter after the addition
}

// LocalStore keeps the counters in this process: decisions are local to
// it, as with one envoyproxy/ratelimit replica per Redis. The zero value
// is not usable; call NewLocalStore.
type LocalStore struct {
	seed   maphash.Seed
	shards [64]localShard
}

// localShard is one lock's share of the counters. Expired counters are
// swept when a call finds the shard's next sweep due, so memory follows
// the counters of the current windows.
type localShard struct {
	mu        sync.Mutex
	counts    map[string]localCount
	nextSweep int64
}

type localCount struct {
	n        uint64
	expireAt int64
}

var _ Store = (*LocalStore)(nil)

// NewLocalStore returns an empty in-process store.
func NewLocalStore() *LocalStore {
	s := &LocalStore{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].counts = map[string]localCount{}
	}
	return s
}

// Incr implements Store. It takes the time from each Incr, so the store
// needs no clock; a counter is forgotten at the end of its window.
func (s *LocalStore) Incr(_ context.Context, incrs []Incr) error {
	for i := range incrs {
		in := &incrs[i]
		sh := &s.shards[maphash.String(s.seed, in.Key)%uint64(len(s.shards))]
		sh.mu.Lock()
		if in.Now >= sh.nextSweep {
			sh.sweep(in.Now)
		}
		c := sh.counts[in.Key]
		c.n += in.Hits
		c.expireAt = in.Now - in.Now%in.TTL + in.TTL
		sh.counts[in.Key] = c
		in.Count = c.n
		sh.mu.Unlock()
	}
	return nil
}

// sweep drops the counters whose window ended by now (Unix seconds).
func (sh *localShard) sweep(now int64) {
	for k, c := range sh.counts {
		if c.expireAt <= now {
			delete(sh.counts, k)
		}
	}
	sh.nextSweep = now + 1
}

// Len reports how many counters the store holds, for tests.
func (s *LocalStore) Len() int {
	n := 0
	for i := range s.shards {
		s.shards[i].mu.Lock()
		n += len(s.shards[i].counts)
		s.shards[i].mu.Unlock()
	}
	return n
}

func secondsDuration(s int64) time.Duration { return time.Duration(s) * time.Second }
