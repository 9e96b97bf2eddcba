package flow

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

// passes counts the calls for user u that pass before the first refusal
// (at most 50), all at one instant.
func passes(t *testing.T, e *Engine, u string) int {
	t.Helper()
	for n := range 50 {
		if got := try(t, e, "r", WithUser(u)); got != "" {
			return n
		}
	}
	return 50
}

// TestKeyRecordReuse: a key that takes the record of an evicted key, or
// comes back after its own eviction, starts as a new key does, for token
// buckets (whose record holds the bucket, restarted in place) and for an
// algorithm whose limiter is kept apart; the table never hands out more
// records than MaxKeys.
func TestKeyRecordReuse(t *testing.T) {
	for _, algo := range []Algorithm{AlgoTokenBucket, AlgoWarmUp, AlgoFixedWindow} {
		r := Rule{ID: "u", Resource: "r", Level: LevelUser, Algorithm: algo, Limit: 3, Window: time.Hour, MaxKeys: 2}
		if algo == AlgoWarmUp {
			r.Warmup = time.Second
		}
		e, clk := newTestEngine(t, r)
		fresh := passes(t, e, "a")
		if fresh == 0 || fresh == 50 {
			t.Fatalf("%v: a new key passed %d calls, want some and a refusal", algo, fresh)
		}
		clk.Advance(time.Second)
		passes(t, e, "b")
		for i := range 6 { // each new user evicts the least recently used one
			clk.Advance(time.Second)
			u := "n" + strconv.Itoa(i)
			if got := passes(t, e, u); got != fresh {
				t.Fatalf("%v: user %s in a reused record passed %d, a new key %d", algo, u, got, fresh)
			}
		}
		clk.Advance(time.Second)
		if got := passes(t, e, "a"); got != fresh { // back after its eviction
			t.Fatalf("%v: a again passed %d, want %d", algo, got, fresh)
		}
		kt := e.rules.Load().compiled[0].keys
		if kt.recs.next > 2 || kt.len() != 2 {
			t.Fatalf("%v: %d records handed out, %d keys, want <= 2 and 2", algo, kt.recs.next, kt.len())
		}
		if (algo == AlgoFixedWindow) == kt.recs.bucket {
			t.Fatalf("%v: records hold a bucket: %v", algo, kt.recs.bucket)
		}
	}
}

// TestKeyRecordReuseWhileHeld: calls that still hold an evicted key's
// bucket while its record goes to other keys, again and again, from
// several goroutines (run with -race): the record's bucket is restarted,
// not rebuilt, so nothing races, and the table stays within MaxKeys.
func TestKeyRecordReuseWhileHeld(t *testing.T) {
	r := Rule{ID: "u", Resource: "r", Level: LevelUser, Algorithm: AlgoTokenBucket, Limit: 1e6, MaxKeys: 4}
	e, _ := newTestEngine(t, r)
	cr := e.rules.Load().compiled[0]
	kt := cr.keys
	held, err := kt.get(cr, "held", e.now())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				now := e.now()
				if g == 0 { // the call that took "held" before its eviction
					if d := held.TryAcquire(now, 1, 0); d.OK && i%2 == 0 {
						held.Refund(now, 1)
					}
					continue
				}
				lim, err := kt.get(cr, "k"+strconv.Itoa(g*10000+i), now)
				if err != nil {
					t.Error(err)
					return
				}
				lim.TryAcquire(now, 1, 0)
			}
		}()
	}
	wg.Wait()
	if n := kt.len(); n > 4 || kt.recs.next > 4 {
		t.Fatalf("%d keys, %d records, want <= 4", n, kt.recs.next)
	}
}

// TestMaxKeysBound: MaxKeys past what a table can number is refused.
func TestMaxKeysBound(t *testing.T) {
	r := Rule{ID: "u", Resource: "r", Level: LevelUser, Algorithm: AlgoTokenBucket, Limit: 5, MaxKeys: MaxKeysLimit}
	if err := r.Validate(); err != nil {
		t.Fatalf("MaxKeys %d: %v", MaxKeysLimit, err)
	}
	r.MaxKeys++
	if err := r.Validate(); err == nil {
		t.Fatalf("MaxKeys %d accepted", r.MaxKeys)
	}
}
