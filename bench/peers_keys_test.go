package bench

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flowgate/flowgate/flow"
	xrate "golang.org/x/time/rate"
)

// Per-key limits: one limit per user over 10 000 and 100 000 distinct
// users, every call for the next user in turn, in steady state (every
// user's limiter exists before the timer starts). flowgate holds them in a
// user-level rule's bounded, sharded table; the peers are the way people
// usually key x/time/rate: a map behind a sync.Mutex (the "visitors" map
// of the common blog recipe) and a sync.Map with LoadOrStore. Neither map
// is bounded or ever forgets a user: in a service that is a memory leak
// flowgate does not have (MaxKeys, IdleTTL), so the maps do less work.
//
//	cd bench && go test -run '^$' -bench 'PeersKeys' -benchmem

// peerUsers are the user ids, built once so no op formats a string.
var peerUsers = func() []string {
	us := make([]string, 100_000)
	for i := range us {
		us[i] = "u" + strconv.Itoa(i)
	}
	return us
}()

var peerKeyCounts = []int{10_000, 100_000}

func keysName(n int) string { return strconv.Itoa(n/1000) + "k-keys" }

// userRule is a per-user bucket no benchmark drains; MaxKeys is twice the
// users so the table's bound never evicts one of them.
func userRule(keys int) flow.Rule {
	return flow.Rule{ID: "per-user", Resource: "r", Level: flow.LevelUser, Algorithm: flow.AlgoTokenBucket,
		Limit: passRate, MaxKeys: 2 * keys}
}

// keyedLimiter is the per-user decision of one side.
type keyedLimiter interface{ allow(user string) bool }

type flowgateKeyed struct{ e *flow.Engine }

func (f flowgateKeyed) allow(user string) bool {
	p, err := f.e.Entry("r", flow.WithUser(user))
	if err != nil {
		return false
	}
	p.Exit()
	return true
}

// mutexMap is the common recipe: a map of limiters behind one mutex,
// created on first sight.
type mutexMap struct {
	mu sync.Mutex
	m  map[string]*xrate.Limiter
}

func (m *mutexMap) allow(user string) bool {
	m.mu.Lock()
	l, ok := m.m[user]
	if !ok {
		l = xrate.NewLimiter(passRate, passRate)
		m.m[user] = l
	}
	m.mu.Unlock()
	return l.Allow()
}

// syncMap is the lock-free-read variant: Load, and LoadOrStore on a miss.
type syncMap struct{ m sync.Map }

func (m *syncMap) allow(user string) bool {
	v, ok := m.m.Load(user)
	if !ok {
		v, _ = m.m.LoadOrStore(user, xrate.NewLimiter(passRate, passRate))
	}
	return v.(*xrate.Limiter).Allow()
}

// keyedSides builds each side for n users.
func keyedSides(tb testing.TB, n int) []struct {
	name string
	lim  keyedLimiter
} {
	return []struct {
		name string
		lim  keyedLimiter
	}{
		{"flowgate", flowgateKeyed{peerEngine(tb, nil, userRule(n))}},
		{"xrate-mutexmap", &mutexMap{m: make(map[string]*xrate.Limiter)}},
		{"xrate-syncmap", &syncMap{}},
	}
}

// warm creates every user's limiter and checks each one admits.
func warm(tb testing.TB, name string, l keyedLimiter, n int) {
	tb.Helper()
	for _, u := range peerUsers[:n] {
		if !l.allow(u) {
			tb.Fatalf("%s refused %s while warming", name, u)
		}
	}
}

func BenchmarkPeersKeys(b *testing.B) {
	for _, n := range peerKeyCounts {
		for _, s := range keyedSides(b, n) {
			b.Run(keysName(n)+"/"+s.name, func(b *testing.B) {
				warm(b, s.name, s.lim, n)
				users := peerUsers[:n]
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					if !s.lim.allow(users[i]) {
						b.Fatalf("%s refused %s", s.name, users[i])
					}
					if i++; i == n {
						i = 0
					}
				}
			})
		}
	}
}

// BenchmarkPeersKeysParallel: the same from every P at once, each
// goroutine walking the users from its own offset. flowgate reports
// blocked/op for the stale-instant refusals described at
// BenchmarkPeersPassParallel.
func BenchmarkPeersKeysParallel(b *testing.B) {
	for _, n := range peerKeyCounts {
		for _, s := range keyedSides(b, n) {
			b.Run(keysName(n)+"/"+s.name, func(b *testing.B) {
				warm(b, s.name, s.lim, n)
				users := peerUsers[:n]
				var next, blocked atomic.Int64
				b.ReportAllocs()
				b.ResetTimer() // warming 100 000 users is not the op
				b.RunParallel(func(pb *testing.PB) {
					i := int(next.Add(7919)) % n
					for pb.Next() {
						if !s.lim.allow(users[i]) {
							blocked.Add(1)
						}
						if i++; i == n {
							i = 0
						}
					}
				})
				b.ReportMetric(float64(blocked.Load())/float64(b.N), "blocked/op")
			})
		}
	}
}
