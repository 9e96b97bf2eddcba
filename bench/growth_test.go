package bench

import (
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

func growthUsersN(b *testing.B, n int) {
	users := growthUserKeys(n)
	e := peerEngine(b, nil, growthRule("u", "r", flow.LevelUser, 2*n))
	m := &mutexMap{m: make(map[string]*xrate.Limiter, n)}
	for _, u := range users { // every user's limiter exists before the timer starts
		if !growthEntry(e, flow.WithUser(u)) || !m.allow(u) {
			b.Fatal("refused while warming")
		}
	}
	b.Run("flowgate", func(b *testing.B) {
		growthLoop(b, 1, func(i int) bool { return growthEntry(e, flow.WithUser(users[i%n])) })
	})
	b.Run("xrate", func(b *testing.B) { growthLoop(b, 1, func(i int) bool { return m.allow(users[i%n]) }) })
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
