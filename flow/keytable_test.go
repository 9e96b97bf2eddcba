package flow

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow/internal/algo"
)

func ipKey(i int) string {
	return strconv.Itoa(i>>24&255) + "." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
}

func keysOf(e *Engine, id string) int {
	for _, r := range e.Snapshot().Rules {
		if r.ID == id {
			return r.Keys
		}
	}
	return -1
}

func TestKeyEvictionLeastRecentlyUsed(t *testing.T) {
	r := fw("ip", "r", LevelIP, 1, time.Hour)
	r.MaxKeys = 3
	e, clk := newTestEngine(t, r)
	for _, ip := range []string{"a", "b", "c"} {
		if got := try(t, e, "r", WithIP(ip)); got != "" {
			t.Fatalf("%s: refused by %q", ip, got)
		}
		clk.Advance(time.Second)
	}
	if got := try(t, e, "r", WithIP("a")); got != "ip" { // a is tracked, and now the most recent
		t.Fatalf("a again: got %q, want ip", got)
	}
	clk.Advance(time.Second)
	if got := try(t, e, "r", WithIP("d")); got != "" { // evicts b, the least recently used
		t.Fatalf("d: refused by %q", got)
	}
	if got := keysOf(e, "ip"); got != 3 {
		t.Fatalf("keys: got %d, want 3", got)
	}
	for ip, want := range map[string]string{"a": "ip", "c": "ip", "d": "ip"} {
		if got := try(t, e, "r", WithIP(ip)); got != want {
			t.Fatalf("%s after eviction: got %q, want %q", ip, got, want)
		}
	}
	if got := try(t, e, "r", WithIP("b")); got != "" { // forgotten: starts afresh
		t.Fatalf("b after eviction: refused by %q", got)
	}
}

func TestKeyIdleTTL(t *testing.T) {
	r := fw("u", "r", LevelUser, 1, time.Hour)
	r.IdleTTL = time.Minute
	e, clk := newTestEngine(t, r)
	for _, u := range []string{"a", "b"} {
		try(t, e, "r", WithUser(u))
	}
	clk.Advance(30 * time.Second)
	if got := try(t, e, "r", WithUser("a")); got != "u" {
		t.Fatalf("a within the TTL: got %q, want u", got)
	}
	clk.Advance(61 * time.Second) // b idle 91s, a idle 61s: both forgotten
	if got := try(t, e, "r", WithUser("a")); got != "" {
		t.Fatalf("a after the TTL: refused by %q", got)
	}
	e.Sweep()
	if got := keysOf(e, "u"); got != 1 {
		t.Fatalf("keys after Sweep: got %d, want 1 (a)", got)
	}
	clk.Advance(2 * time.Minute)
	e.Sweep()
	if got := keysOf(e, "u"); got != 0 {
		t.Fatalf("keys after a second Sweep: got %d, want 0", got)
	}
}

func TestKeyTableSharesSumToMaxKeys(t *testing.T) {
	for _, max := range []int{1, 7, 2047, 2048, 100000, 1 << 20} {
		kt := newKeyTable(max, 0, true)
		sum := 0
		for i := range kt.shards {
			sum += kt.shards[i].capacity
		}
		if sum != max || len(kt.shards) > maxShards {
			t.Fatalf("MaxKeys %d: %d shards hold %d", max, len(kt.shards), sum)
		}
	}
}

// TestKeyFloodBounded sends 1 000 000 distinct IPs at a rule with MaxKeys
// 100 000 and checks the table never holds more, and reports the heap.
func TestKeyFloodBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("1 000 000 calls")
	}
	const maxKeys, flood = 100000, 1000000
	r := Rule{ID: "ip", Resource: "r", Level: LevelIP, Algorithm: AlgoTokenBucket, Limit: 10, MaxKeys: maxKeys}
	e, clk := newTestEngine(t, r)
	heap0 := heapInUse()
	for i := range flood {
		if got := try(t, e, "r", WithIP(ipKey(i))); got != "" {
			t.Fatalf("ip %d: refused by %q", i, got)
		}
		if i%1000 == 0 {
			clk.Advance(time.Millisecond)
		}
		if i%100000 == 99999 {
			if n := keysOf(e, "ip"); n > maxKeys {
				t.Fatalf("after %d IPs: %d keys tracked, bound %d", i+1, n, maxKeys)
			}
		}
	}
	n := keysOf(e, "ip")
	if n > maxKeys || n < maxKeys*9/10 {
		t.Fatalf("tracked %d keys, want <= %d and near it", n, maxKeys)
	}
	heap1 := heapInUse()
	t.Logf("flood of %d IPs, MaxKeys %d: %d keys tracked, heap %+.1f MiB (%.0f B per tracked key)",
		flood, maxKeys, n, float64(heap1-heap0)/(1<<20), float64(heap1-heap0)/float64(n))
	runtime.KeepAlive(e)
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestMemoryPerKey measures the heap one tracked key costs, limiter
// included, for each algorithm at the user level, and the table's own part
// (the same minus 100 000 bare limiters). The table's part is ours to bound:
// at most 64 bytes (map slot and entry); the limiters belong to the
// algorithms. The target for a token-bucket key is <= 200 bytes in
// all; every algorithm is held to it.
func TestMemoryPerKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 100 000 keys per algorithm")
	}
	const n = 100000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(1000000+i)
	}
	for _, a := range Algorithms() {
		if a.isList() {
			continue // a list tracks no keys
		}
		r := Rule{ID: "u", Resource: "r", Level: LevelUser, Algorithm: a, Limit: 10, MaxKeys: n}
		switch a {
		case AlgoWarmUp, AlgoSentinelWarmUp:
			r.Warmup = time.Second
		case AlgoCircuitBreaker:
			r.Limit, r.Strategy, r.Threshold, r.OpenFor = 0, BreakerErrorRatio, 0.5, time.Second
		}
		if a == AlgoAdaptiveConcurrency {
			r.Limit = 0
		}
		e, _ := newTestEngine(t, r)
		before := heapInUse()
		for _, k := range keys {
			p, err := e.Entry("r", WithUser(k))
			if err != nil {
				t.Fatalf("%v: %v", a, err)
			}
			p.Exit()
		}
		per := float64(heapInUse()-before) / n
		runtime.KeepAlive(e)
		e = nil

		d := r.WithDefaults()
		clk := clock.NewFake(t0)
		lims := make([]limiter, n)
		before = heapInUse()
		for i := range lims {
			if tb, ok := lims[0].(*algo.Bucket); ok {
				lims[i] = tb.Clone() // as keys get them: sharing the rate data
			} else {
				lims[i], _ = newLimiter(&d, d.Limit, clk, 0)
			}
		}
		lim := float64(heapInUse()-before) / n
		runtime.KeepAlive(lims)
		t.Logf("%-14v %4.0f B per tracked key: limiter %4.0f B, table %3.0f B", a, per, lim, per-lim)
		if per-lim > 64 {
			t.Errorf("%v: the table costs %.0f B per key, want <= 64", a, per-lim)
		}
		if per > 200 {
			t.Errorf("%v: %.0f B per tracked key, want <= 200", a, per)
		}
	}
}

// TestKeyBucketsShareRateData: the token buckets of one user rule are
// cloned from a prototype at the current limit, full as a new bucket
// starts, and an adaptive change gives new keys the new limit.
func TestKeyBucketsShareRateData(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "u", Resource: "r", Level: LevelUser, Algorithm: AlgoTokenBucket,
		Limit: 10, Burst: 4, Adaptive: true})
	cr := e.rules.Load().compiled[0]
	bucket := func(user string) *algo.Bucket {
		t.Helper()
		lim, err := cr.limiterFor(user, clk.Nanotime())
		if err != nil {
			t.Fatal(err)
		}
		return lim.(*algo.Bucket)
	}
	a, b := bucket("a"), bucket("b")
	if a == b {
		t.Fatal("two users share one bucket")
	}
	if a.Rate() != 10 || a.Remaining(clk.Nanotime()) != 4 {
		t.Fatalf("a new key's bucket: rate %v stored %v, want 10 and 4 (full)", a.Rate(), a.Remaining(clk.Nanotime()))
	}
	for range 5 { // user a drains its bucket; b keeps its own
		try(t, e, "r", WithUser("a"))
	}
	if got := try(t, e, "r", WithUser("a")); got != "u" {
		t.Fatalf("a's 6th call: %q, want refused by u", got)
	}
	if got := try(t, e, "r", WithUser("b")); got != "" {
		t.Fatalf("b refused (%q): buckets are not shared", got)
	}
	e.SetAdaptiveFactor(0.5)
	c := bucket("c")
	if c.Rate() != 5 || c.Remaining(clk.Nanotime()) != 2 {
		t.Fatalf("a key new after the factor 0.5: rate %v stored %v, want 5 and 2 (full)", c.Rate(), c.Remaining(clk.Nanotime()))
	}
	if a := bucket("a"); a.Rate() != 5 {
		t.Fatalf("an existing key after the factor 0.5: rate %v, want 5", a.Rate())
	}
}
