// Package clustertest holds the test helpers the Redis token server's
// tests and the remote client's tests share: rules, engines on a fake
// clock, unique resource names and Redis's clock. Nothing here is public.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
	"github.com/redis/go-redis/v9"
)

// NewEngine returns an engine on a fake clock starting at start, so
// engines of one test can disagree about the time.
func NewEngine(t testing.TB, ts flow.TokenServer, start time.Time, rules ...flow.Rule) *flow.Engine {
	t.Helper()
	e := flow.NewEngine(flow.WithClock(clock.NewFake(start)), flow.WithTokenServer(ts))
	if err := e.LoadRules(rules); err != nil {
		t.Fatal(err)
	}
	return e
}

// T0 is the start of the tests' fake clocks.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Rule is a global cluster rule of resource res.
func Rule(id, res string, algo flow.Algorithm, limit float64, window time.Duration) flow.Rule {
	return flow.Rule{ID: id, Resource: res, Algorithm: algo, Limit: limit, Window: window,
		Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "deny"}}
}

// Uniq returns a resource name no other test uses, so keys start empty.
var uniqN atomic.Int64

func Uniq(name string) string {
	return fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), uniqN.Add(1))
}

// RedisNow reads Redis's clock.
func RedisNow(t testing.TB, rdb redis.UniversalClient) time.Time {
	t.Helper()
	var now time.Time
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		// Nodes share the host's clock; ask one.
		var c *redis.Client
		if c, err = cc.MasterForKey(context.Background(), "clock"); err == nil {
			now, err = c.Time(context.Background()).Result()
		}
	} else {
		now, err = rdb.Time(context.Background()).Result()
	}
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// WaitWindowStart returns once Redis's clock has at least need left in its
// current window of length w (windows are aligned on Redis's clock), so a
// burst lands in one window. It waits for Redis, not for our own logic.
func WaitWindowStart(t testing.TB, rdb redis.UniversalClient, w, need time.Duration) {
	t.Helper()
	now := RedisNow(t, rdb)
	left := w - time.Duration(now.UnixMicro()%w.Microseconds())*time.Microsecond
	if left < need {
		time.Sleep(left + 5*time.Millisecond)
	}
}

// Hammer runs goroutines on every engine, each making calls Entry calls,
// and returns how many were admitted and refused. An error other than a
// *BlockError, or a block because the token server could not answer,
// fails the test.
func Hammer(t testing.TB, engines []*flow.Engine, goroutines int, res string, calls int, hold func(), opts ...flow.EntryOption) (passed, refused int64) {
	t.Helper()
	return HammerUntil(t, engines, goroutines, res, func(i int) bool { return i >= calls }, hold, opts...)
}

// HammerFor is Hammer for d of real time (the limits run on Redis's
// clock). Besides the admitted count it returns busy: how long the callers
// were demonstrably asking, the time between the first and the last answer
// less every stretch longer than gap in which no call was answered (the
// process or Redis starved of CPU: nothing can be admitted then, which says
// nothing about the limiter). A lower bound on admissions holds over busy
// however loaded the machine is; upper bounds use the whole elapsed time.
func HammerFor(t testing.TB, engines []*flow.Engine, goroutines int, res string, d, gap time.Duration) (passed int64, busy time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	var mu sync.Mutex
	var answered []time.Time
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	for _, e := range engines {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Time
				var n int64
				defer func() {
					mu.Lock()
					answered = append(answered, mine...)
					passed += n
					mu.Unlock()
				}()
				for time.Now().Before(end) {
					pm, err := e.Entry(res)
					mine = append(mine, time.Now())
					if err != nil {
						var be *flow.BlockError
						if !errors.As(err, &be) || be.Reason == flow.ReasonClusterUnavailable {
							select {
							case errc <- err:
							default:
							}
							return
						}
						continue
					}
					n++
					pm.Exit()
				}
			}()
		}
	}
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatalf("Entry: %v", err)
	default:
	}
	slices.SortFunc(answered, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(answered); i++ {
		busy += min(gap, answered[i].Sub(answered[i-1]))
	}
	return passed, busy
}

// HammerUntil runs goroutines callers per engine, each entering res until
// stop(i) says so, holding every permit for hold. A refusal by the token
// server's fallback (cluster unavailable) fails the test.
func HammerUntil(t testing.TB, engines []*flow.Engine, goroutines int, res string, stop func(i int) bool, hold func(), opts ...flow.EntryOption) (passed, refused int64) {
	t.Helper()
	return hammer(t, engines, goroutines, res, stop, hold, false, opts)
}

// HammerThroughOutage is HammerUntil where a refusal by the fallback is an
// expected refusal: a replica or Redis goes away mid-run.
func HammerThroughOutage(t testing.TB, engines []*flow.Engine, goroutines int, res string, stop func(i int) bool, hold func(), opts ...flow.EntryOption) (passed, refused int64) {
	t.Helper()
	return hammer(t, engines, goroutines, res, stop, hold, true, opts)
}

func hammer(t testing.TB, engines []*flow.Engine, goroutines int, res string, stop func(i int) bool, hold func(), outageRefuses bool, opts []flow.EntryOption) (passed, refused int64) {
	t.Helper()
	var wg sync.WaitGroup
	var p, r atomic.Int64
	errc := make(chan error, 1)
	for _, e := range engines {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; !stop(i); i++ {
					pm, err := e.Entry(res, opts...)
					if err != nil {
						var be *flow.BlockError
						if !errors.As(err, &be) || (be.Reason == flow.ReasonClusterUnavailable && !outageRefuses) {
							select {
							case errc <- err:
							default:
							}
							return
						}
						r.Add(1)
						continue
					}
					p.Add(1)
					if hold != nil {
						hold()
					}
					pm.Exit()
				}
			}()
		}
	}
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatalf("Entry: %v", err)
	default:
	}
	return p.Load(), r.Load()
}

// ColdBound is the most a cold warm_up bucket of 200/s with a 1s warm-up
// admits in d, by Guava's arithmetic: the first call passes at once and the
// k+1-th once the first k have been paid for. Stored permits start at
// max = 200 with threshold 100; above it a permit at level p costs
// 5ms + (p-100)*100us (15ms at the top).
func ColdBound(d time.Duration) float64 {
	paid, k := 0.0, 0
	for stored := 200; ; stored-- {
		cost := 5000.0
		if stored > 100 {
			cost += (float64(stored) - 100 - 0.5) * 100 // trapezoid of one permit
		}
		if paid+cost > float64(d.Microseconds()) {
			return float64(k + 1)
		}
		paid += cost
		k++
	}
}
