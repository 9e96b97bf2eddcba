package cluster

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

// backend gives each engine of a test its own client to one Redis (a
// single server or a cluster), as separate instances would have.
type backend struct {
	name   string
	client func(t *testing.T) redis.UniversalClient
}

// newServer returns a token server on rdb, closed at the end of the test.
// Its timeout is a generous 2s unless opts say otherwise: correctness, not
// latency, is under test, and a slow run (-race, shared cores) must not
// fall back.
func newServer(t *testing.T, rdb redis.UniversalClient, opts ...Option) *RedisTokenServer {
	t.Helper()
	ts, err := NewRedisTokenServer(rdb, append([]Option{WithTimeout(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts
}

// newEngine returns an engine on a fake clock starting at start, so
// engines of one test can disagree about the time.
func newEngine(t *testing.T, ts flow.TokenServer, start time.Time, rules ...flow.Rule) *flow.Engine {
	t.Helper()
	e := flow.NewEngine(flow.WithClock(clock.NewFake(start)), flow.WithTokenServer(ts))
	if err := e.LoadRules(rules); err != nil {
		t.Fatal(err)
	}
	return e
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// crule is a global cluster rule of resource res.
func crule(id, res string, algo flow.Algorithm, limit float64, window time.Duration) flow.Rule {
	return flow.Rule{ID: id, Resource: res, Algorithm: algo, Limit: limit, Window: window,
		Cluster: &flow.ClusterSpec{Threshold: "global", Fallback: "deny"}}
}

// uniq returns a resource name no other test uses, so keys start empty.
var uniqN atomic.Int64

func uniq(name string) string {
	return fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), uniqN.Add(1))
}

// hammer runs goroutines on every engine, each making calls Entry calls,
// and returns how many were admitted and refused. An error other than a
// *BlockError, or a block because the token server could not answer,
// fails the test.
func hammer(t *testing.T, engines []*flow.Engine, goroutines int, res string, calls int, hold func(), opts ...flow.EntryOption) (passed, refused int64) {
	t.Helper()
	return hammerUntil(t, engines, goroutines, res, func(i int) bool { return i >= calls }, hold, opts...)
}

// hammerFor is hammer for d of real time (the limits run on Redis's
// clock). Besides the admitted count it returns busy: how long the callers
// were demonstrably asking, the time between the first and the last answer
// less every stretch longer than gap in which no call was answered (the
// process or Redis starved of CPU: nothing can be admitted then, which says
// nothing about the limiter). A lower bound on admissions holds over busy
// however loaded the machine is; upper bounds use the whole elapsed time.
func hammerFor(t *testing.T, engines []*flow.Engine, goroutines int, res string, d, gap time.Duration) (passed int64, busy time.Duration) {
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

func hammerUntil(t *testing.T, engines []*flow.Engine, goroutines int, res string, stop func(i int) bool, hold func(), opts ...flow.EntryOption) (passed, refused int64) {
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
						if !errors.As(err, &be) || be.Reason == flow.ReasonClusterUnavailable {
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

// redisNow reads Redis's clock.
func redisNow(t *testing.T, rdb redis.UniversalClient) time.Time {
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

// waitWindowStart returns once Redis's clock has at least need left in its
// current window of length w (windows are aligned on Redis's clock), so a
// burst lands in one window. It waits for Redis, not for our own logic.
func waitWindowStart(t *testing.T, rdb redis.UniversalClient, w, need time.Duration) {
	t.Helper()
	now := redisNow(t, rdb)
	left := w - time.Duration(now.UnixMicro()%w.Microseconds())*time.Microsecond
	if left < need {
		time.Sleep(left + 5*time.Millisecond)
	}
}
