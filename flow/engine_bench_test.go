package flow

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// The benchmarks run on the real clock, beside x/time/rate's Allow, so the
// ratios compare like with like in one run:
//
//	go test ./flow -run '^$' -bench . -benchmem

// passRate is x/time/rate's limit in the benchmarks beside which flowgate's
// passing calls are compared: finite and never reached, as bigBucket's.
// (rate.Inf is a short cut in x/time/rate: Allow then skips its token
// arithmetic, about 207 instructions instead of about 480.)
const passRate = 1e9

func BenchmarkRateAllow(b *testing.B) {
	l := rate.NewLimiter(passRate, passRate)
	b.ReportAllocs()
	for b.Loop() {
		l.Allow()
	}
}

func BenchmarkRateAllowParallel(b *testing.B) {
	l := rate.NewLimiter(passRate, passRate)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Allow()
		}
	})
}

func BenchmarkRateAllowBlocked(b *testing.B) {
	l := rate.NewLimiter(rate.Every(time.Hour), 1)
	l.Allow()
	b.ReportAllocs()
	for b.Loop() {
		l.Allow()
	}
}

func benchEngine(b *testing.B, rules ...Rule) *Engine {
	b.Helper()
	e := NewEngine()
	if err := e.LoadRules(rules); err != nil {
		b.Fatal(err)
	}
	return e
}

var bigBucket = Rule{ID: "tb", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1e9}

func BenchmarkEntryExitPass(b *testing.B) {
	e := benchEngine(b, bigBucket)
	b.ReportAllocs()
	for b.Loop() {
		p, err := e.Entry("r")
		if err != nil {
			b.Fatal(err)
		}
		p.Exit()
	}
}

// BenchmarkEntryExitPassParallel reports blocked/op: a goroutine preempted
// between reading the clock and reserving holds a stale now. The bursty
// bucket serves it as of its latest moment while it holds permits (see
// tokenbucket.Limiter.TryReserveAt), so this should stay 0; it shows how often a
// real clock still makes a stale call refused.
func BenchmarkEntryExitPassParallel(b *testing.B) {
	e := benchEngine(b, bigBucket)
	var blocked atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := e.Entry("r")
			if err != nil {
				blocked.Add(1)
				continue
			}
			p.Exit()
		}
	})
	b.ReportMetric(float64(blocked.Load())/float64(b.N), "blocked/op")
}

func BenchmarkEntryBlocked(b *testing.B) {
	e := benchEngine(b, Rule{ID: "tb", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1, Window: time.Hour})
	for range 2 { // Guava: the stored permit, then one fresh permit paid for by the next call
		if p, err := e.Entry("r"); err == nil {
			p.Exit()
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Entry("r"); err == nil {
			b.Fatal("passed")
		}
	}
}

// BenchmarkDecideBlocked is BenchmarkEntryBlocked through Decide: the
// refusal comes back by value, so it allocates nothing. Compare it with
// BenchmarkRateAllowBlocked in the same run.
func BenchmarkDecideBlocked(b *testing.B) {
	e := benchEngine(b, Rule{ID: "tb", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1, Window: time.Hour})
	for range 2 { // as in BenchmarkEntryBlocked
		if d := e.Decide("r"); d.Allowed {
			d.Permit.Exit()
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if d := e.Decide("r"); d.Allowed {
			b.Fatal("passed")
		}
	}
}

// BenchmarkDecideExitPass is BenchmarkEntryExitPass through Decide.
func BenchmarkDecideExitPass(b *testing.B) {
	e := benchEngine(b, bigBucket)
	b.ReportAllocs()
	for b.Loop() {
		d := e.Decide("r")
		if !d.Allowed {
			b.Fatal("blocked")
		}
		d.Permit.Exit()
	}
}

// BenchmarkEntryBlockedParallel: refusals from every P at once. A refusal
// writes nothing to the bucket but reads its state, and counts itself in
// the resource's current statistics bucket: both lines move between cores.
func BenchmarkEntryBlockedParallel(b *testing.B) {
	e := benchEngine(b, Rule{ID: "tb", Resource: "r", Algorithm: AlgoTokenBucket, Limit: 1, Window: time.Hour})
	for range 2 {
		if p, err := e.Entry("r"); err == nil {
			p.Exit()
		}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.Entry("r"); err == nil {
				b.Error("passed")
				return
			}
		}
	})
}

func BenchmarkEntryExitNoRule(b *testing.B) {
	e := benchEngine(b, bigBucket)
	b.ReportAllocs()
	for b.Loop() {
		p, _ := e.Entry("none")
		p.Exit()
	}
}

// BenchmarkEntryExitThreeLevels: ip, user and global token buckets over
// 10 000 distinct users and IPs (keys built beforehand), in steady state.
func BenchmarkEntryExitThreeLevels(b *testing.B) {
	e, users, ips := threeLevelsEngine(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p, err := e.Entry("r", WithUser(users[i]), WithIP(ips[i]))
		if err != nil {
			b.Fatal(err)
		}
		p.Exit()
		if i++; i == len(users) {
			i = 0
		}
	}
}

// BenchmarkEntryExitThreeLevelsParallel: the same from every P at once,
// each goroutine walking the keys from its own offset.
func BenchmarkEntryExitThreeLevelsParallel(b *testing.B) {
	e, users, ips := threeLevelsEngine(b)
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(2477)) % len(users)
		for pb.Next() {
			if p, err := e.Entry("r", WithUser(users[i]), WithIP(ips[i])); err == nil {
				p.Exit()
			}
			if i++; i == len(users) {
				i = 0
			}
		}
	})
}

func threeLevelsEngine(b *testing.B) (*Engine, []string, []string) {
	e := benchEngine(b,
		Rule{ID: "ip", Resource: "r", Level: LevelIP, Algorithm: AlgoTokenBucket, Limit: 1e9},
		Rule{ID: "user", Resource: "r", Level: LevelUser, Algorithm: AlgoTokenBucket, Limit: 1e9},
		bigBucket,
	)
	const n = 10000
	users, ips := make([]string, n), make([]string, n)
	for i := range n {
		users[i] = "user-" + strconv.Itoa(i)
		ips[i] = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
	}
	for i := range n { // warm: every key tracked
		p, _ := e.Entry("r", WithUser(users[i]), WithIP(ips[i]))
		p.Exit()
	}
	return e, users, ips
}
