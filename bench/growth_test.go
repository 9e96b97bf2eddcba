package bench

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/flowgate/flowgate/flow"
	xrate "golang.org/x/time/rate"
)

// Cost growth (issue 22, part 3): one Entry+Exit that admits, against
// what grows around it, beside the same work built from x/time/rate
// limiters in the same run (a map behind a mutex per keyed level, as in
// BenchmarkPeersKeys). Every limit is passRate, so every call passes.
//
//	cd bench && go test -run '^$' -bench 'Growth' -benchmem -count 3
//
// rules: rules on the called resource (each one checked); resources:
// rules loaded for other resources (one on the called one); users: users
// tracked by a user-level rule, every call for the next user in turn;
// goroutines: callers of one global rule at once; levels: global, user +
// global, ip + user + global over 10 000 users and IPs.

var growthUsers []string

func growthUserKeys(n int) []string {
	for len(growthUsers) < n {
		growthUsers = append(growthUsers, "u"+strconv.Itoa(len(growthUsers)))
	}
	return growthUsers[:n]
}

func growthRule(id, res string, level flow.Level, keys int) flow.Rule {
	return flow.Rule{ID: id, Resource: res, Level: level, Algorithm: flow.AlgoTokenBucket, Limit: passRate, MaxKeys: keys}
}

// growthLoop runs call b.N times from g goroutines; call gets the index.
func growthLoop(b *testing.B, g int, call func(i int) bool) {
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N / g
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * per; i < (w+1)*per; i++ {
				if !call(i) {
					b.Error("refused")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func growthEntry(e *flow.Engine, opts ...flow.EntryOption) bool {
	p, err := e.Entry("r", opts...)
	if err != nil {
		return false
	}
	p.Exit()
	return true
}

func BenchmarkGrowthRules(b *testing.B) {
	for _, k := range []int{1, 3, 10} {
		b.Run(strconv.Itoa(k), func(b *testing.B) { growthRules(b, k) })
	}
}

func growthRules(b *testing.B, k int) {
	var rules []flow.Rule
	lims := make([]*xrate.Limiter, k)
	for i := range k {
		rules = append(rules, growthRule("r"+strconv.Itoa(i), "r", flow.LevelGlobal, 0))
		lims[i] = xrate.NewLimiter(passRate, passRate)
	}
	e := peerEngine(b, nil, rules...)
	b.Run("flowgate", func(b *testing.B) { growthLoop(b, 1, func(int) bool { return growthEntry(e) }) })
	b.Run("xrate", func(b *testing.B) {
		growthLoop(b, 1, func(int) bool {
			for _, l := range lims {
				if !l.Allow() {
					return false
				}
			}
			return true
		})
	})
}

func BenchmarkGrowthResources(b *testing.B) {
	for _, n := range []int{1, 1000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { growthResources(b, n) })
	}
}

func growthResources(b *testing.B, n int) {
	rules := []flow.Rule{growthRule("r", "r", flow.LevelGlobal, 0)}
	m := &mutexMap{m: map[string]*xrate.Limiter{"r": xrate.NewLimiter(passRate, passRate)}}
	for i := 1; i < n; i++ {
		res := "res-" + strconv.Itoa(i)
		rules = append(rules, growthRule(res, res, flow.LevelGlobal, 0))
		m.m[res] = xrate.NewLimiter(passRate, passRate)
	}
	e := peerEngine(b, nil, rules...)
	b.Run("flowgate", func(b *testing.B) { growthLoop(b, 1, func(int) bool { return growthEntry(e) }) })
	b.Run("xrate", func(b *testing.B) { growthLoop(b, 1, func(int) bool { return m.allow("r") }) })
}

func BenchmarkGrowthUsers(b *testing.B) {
	for _, n := range []int{1000, 100_000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { growthUsersN(b, n) })
	}
}

func growthUsersN(b *testing.B, n int) { growthTracked(b, n, n) }

// BenchmarkGrowthActive tracks 1 000 000 users, as the last GrowthUsers
// row, but takes its calls from 1 000 of them in turn: what tracking costs
// when the callers of the moment are a few (GrowthUsers visits every
// tracked user in turn, so every call reads a key nobody used for a
// million calls).
func BenchmarkGrowthActive(b *testing.B) {
	b.Run("1000000", func(b *testing.B) { growthTracked(b, 1_000_000, 1000) })
}

// BenchmarkGrowthUsersRandom is GrowthUsers with the tracked users called
// in a shuffled order (fixed seed) instead of the order they were first
// seen: every call's key, entry and limiter are then somewhere no cache
// holds, as when a million clients call at random, where GrowthUsers lets
// the processor read the entries of consecutive users in turn.
func BenchmarkGrowthUsersRandom(b *testing.B) {
	for _, n := range []int{1000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			users := growthUserKeys(n)
			order := rand.New(rand.NewPCG(1, 2)).Perm(n)
			shuffled := make([]string, n)
			for i, j := range order {
				shuffled[i] = users[j]
			}
			e := peerEngine(b, nil, growthRule("u", "r", flow.LevelUser, 2*n))
			m := &mutexMap{m: make(map[string]*xrate.Limiter, n)}
			for _, u := range users {
				if !growthEntry(e, flow.WithUser(u)) || !m.allow(u) {
					b.Fatal("refused while warming")
				}
			}
			b.Run("flowgate", func(b *testing.B) {
				growthLoop(b, 1, func(i int) bool { return growthEntry(e, flow.WithUser(shuffled[i%n])) })
			})
			b.Run("xrate", func(b *testing.B) { growthLoop(b, 1, func(i int) bool { return m.allow(shuffled[i%n]) }) })
		})
	}
}

// growthTracked tracks n users, then calls for the first active of them in
// turn.
func growthTracked(b *testing.B, n, active int) {
	users := growthUserKeys(n)
	e := peerEngine(b, nil, growthRule("u", "r", flow.LevelUser, 2*n))
	m := &mutexMap{m: make(map[string]*xrate.Limiter, n)}
	for _, u := range users { // every user's limiter exists before the timer starts
		if !growthEntry(e, flow.WithUser(u)) || !m.allow(u) {
			b.Fatal("refused while warming")
		}
	}
	b.Run("flowgate", func(b *testing.B) {
		growthLoop(b, 1, func(i int) bool { return growthEntry(e, flow.WithUser(users[i%active])) })
	})
	b.Run("xrate", func(b *testing.B) { growthLoop(b, 1, func(i int) bool { return m.allow(users[i%active]) }) })
}

func BenchmarkGrowthGoroutines(b *testing.B) {
	e := peerEngine(b, nil, passRule)
	l := xrate.NewLimiter(passRate, passRate)
	for _, g := range []int{1, 2, 8, 64} {
		b.Run(strconv.Itoa(g)+"/flowgate", func(b *testing.B) { growthLoop(b, g, func(int) bool { return growthEntry(e) }) })
		b.Run(strconv.Itoa(g)+"/xrate", func(b *testing.B) { growthLoop(b, g, func(int) bool { return l.Allow() }) })
	}
}

func BenchmarkGrowthLevels(b *testing.B) {
	const n = 10_000
	users := growthUserKeys(n)
	for _, lv := range []string{"global", "user+global", "ip+user+global"} {
		b.Run(lv, func(b *testing.B) { growthLevels(b, lv, users) })
	}
}

func growthLevels(b *testing.B, lv string, users []string) {
	const n = 10_000
	rules := []flow.Rule{growthRule("g", "r", flow.LevelGlobal, 0)}
	global := xrate.NewLimiter(passRate, passRate)
	um := &mutexMap{m: map[string]*xrate.Limiter{}}
	im := &mutexMap{m: map[string]*xrate.Limiter{}}
	if lv != "global" {
		rules = append(rules, growthRule("u", "r", flow.LevelUser, 2*n))
	}
	if lv == "ip+user+global" {
		rules = append(rules, growthRule("i", "r", flow.LevelIP, 2*n))
	}
	e := peerEngine(b, nil, rules...)
	call := func(i int) bool {
		u := users[i%n]
		return growthEntry(e, flow.WithUser(u), flow.WithIP(u))
	}
	ref := func(i int) bool {
		u := users[i%n]
		if lv == "ip+user+global" && !im.allow(u) {
			return false
		}
		if lv != "global" && !um.allow(u) {
			return false
		}
		return global.Allow()
	}
	for i := range n {
		if !call(i) || !ref(i) {
			b.Fatal("refused while warming")
		}
	}
	b.Run("flowgate", func(b *testing.B) { growthLoop(b, 1, call) })
	b.Run("xrate", func(b *testing.B) { growthLoop(b, 1, ref) })
}

// BenchmarkGrowthFloor is this machine's cost of one read from a random
// place in a table as large as flowgate's key index at each GrowthUsers
// size (16 B a slot, MaxKeys twice the users: 2 048 slots at 1 000 users,
// 64 shards of 4 096 at 100 000, 64 of 32 768 at 1 000 000).
//
// chase: each read's place comes from the one before (a pointer chase over
// the table's cache lines in one random cycle), so no two overlap: the
// read's whole latency. call+read: the 1 000-user call of GrowthUsers plus
// one read from a random place that nothing depends on (a xorshift picks
// it), the best case for the processor to overlap a call's read with the
// call's own work; compare GrowthUsers/1000/flowgate. The read still costs
// its whole latency when the call around it is longer than the processor
// looks ahead, so a structure that reads one random slot of that size per
// call adds about the chase's figure, whatever its code.
func BenchmarkGrowthFloor(b *testing.B) {
	for _, c := range []struct {
		name  string
		bytes int
	}{{"1000", 2048 * 16}, {"100000", 64 * 4096 * 16}, {"1000000", 64 * 32768 * 16}} {
		next := chaseTable(c.bytes)
		b.Run(c.name+"/chase", func(b *testing.B) { growthChase(b, next) })
		b.Run(c.name+"/call+read", func(b *testing.B) { growthCallRead(b, next) })
	}
}

// BenchmarkGrowthFloorStream is GrowthFloor's chase over tables of 4 to
// 32 MiB while a sequential stream reads two new cache lines per step
// through 128 MiB, as GrowthUsers at 1 000 000 users reads each next
// user's 128-byte entry: what one index read would cost if the index
// were that size. The stream pushes the table out of the shared cache
// sooner than the chase alone shows, so it says how small a key index
// must be before a million users' reads come from cache (bench/README.md,
// "Cost growth").
func BenchmarkGrowthFloorStream(b *testing.B) {
	stream := make([]uint64, 128<<20/8)
	for i := range stream {
		stream[i] = uint64(i)
	}
	for _, mib := range []int{4, 8, 16, 32} {
		next := chaseTable(mib << 20)
		b.Run(strconv.Itoa(mib)+"MiB", func(b *testing.B) {
			p, sum, j := uint64(0), uint64(0), 0
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p = next[p]
				sum += stream[j] + stream[j+chaseLine] // two lines of the next entry
				if j += 2 * chaseLine; j == len(stream) {
					j = 0
				}
			}
			growthSink = p + sum
		})
	}
}

const chaseLine = 8 // uint64s in a 64-byte cache line

// chaseTable is a table of bytes whose cache lines form one cycle in
// random order: the first word of each line is the index of the next.
func chaseTable(bytes int) []uint64 {
	lines := bytes / 64
	next := make([]uint64, lines*chaseLine)
	order := make([]int, lines)
	for i := range order {
		order[i] = i
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := lines - 1; i > 0; i-- { // Sattolo's shuffle: a single cycle
		j := r.IntN(i)
		order[i], order[j] = order[j], order[i]
	}
	for i, l := range order {
		next[l*chaseLine] = uint64(order[(i+1)%lines] * chaseLine)
	}
	p := uint64(0)
	for range lines { // once round, so the timed reads find the table mapped
		p = next[p]
	}
	growthSink = p
	return next
}

func growthChase(b *testing.B, next []uint64) {
	p := uint64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p = next[p]
	}
	growthSink = p
}

func growthCallRead(b *testing.B, next []uint64) {
	const n = 1000
	users := growthUserKeys(n)
	e := peerEngine(b, nil, growthRule("u", "r", flow.LevelUser, 2*n))
	for _, u := range users {
		if !growthEntry(e, flow.WithUser(u)) {
			b.Fatal("refused while warming")
		}
	}
	lines := uint64(len(next) / chaseLine) // a power of two
	x, sum := uint64(88172645463325252), uint64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		sum += next[(x&(lines-1))*chaseLine]
		if !growthEntry(e, flow.WithUser(users[i%n])) {
			b.Fatal("refused")
		}
	}
	growthSink = sum
}

var growthSink uint64
