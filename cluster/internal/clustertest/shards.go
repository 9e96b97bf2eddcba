package clustertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// UserKey is the Redis key of rule id's state for user at resource
// (prefix{resource|user|user}:id, the token server's layout): its slot is
// where the user's decisions live.
func UserKey(prefix, resource, user, id string) string {
	return prefix + "{" + resource + "|user|" + user + "}:" + id
}

// UsersByShard returns per users for each primary of c, by the slots
// StartCluster assigned: out[i] live on c.Nodes[i].
func UsersByShard(c *redistest.Cluster, per int, keyOf func(user string) string) [][]string {
	out := make([][]string, len(c.Nodes))
	for i, full := 0, 0; full < len(c.Nodes); i++ {
		u := fmt.Sprintf("u%d", i)
		slot := redistest.KeySlot(keyOf(u))
		for s := range c.Nodes {
			if lo, hi := redistest.SlotRange(s); slot >= lo && slot <= hi && len(out[s]) < per {
				out[s] = append(out[s], u)
				if len(out[s]) == per {
					full++
				}
			}
		}
	}
	return out
}

// Outcome is one call of a Traffic: when it ended (since the Traffic
// started), the shard of its user, and whether Redis decided it (it
// passed, or a limit refused it) rather than the rule's fallback.
type Outcome struct {
	At    time.Duration
	Shard int
	Redis bool
}

// Traffic runs calls on users of every shard until Stop, round robin, each
// goroutine one call per every: the load a service puts on the cluster
// while a fault is injected. The rules' fallback must be "deny", so that a
// fallback is told from a decision by its reason.
type Traffic struct {
	Start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	out   []Outcome
	errs  []error
}

// StartTraffic starts goroutines callers per engine on resource res.
func StartTraffic(engines []*flow.Engine, res string, users [][]string, goroutines int, every time.Duration) *Traffic {
	tr := &Traffic{Start: time.Now(), stop: make(chan struct{})}
	for ei, e := range engines {
		for g := range goroutines {
			tr.wg.Add(1)
			go tr.run(e, res, users, ei*goroutines+g, every)
		}
	}
	return tr
}

func (tr *Traffic) run(e *flow.Engine, res string, users [][]string, seed int, every time.Duration) {
	defer tr.wg.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var out []Outcome
	var errs []error
	for i := seed; ; i++ {
		select {
		case <-tr.stop:
			tr.mu.Lock()
			tr.out = append(tr.out, out...)
			tr.errs = append(tr.errs, errs...)
			tr.mu.Unlock()
			return
		case <-tick.C:
		}
		shard := i % len(users)
		u := users[shard][(i/len(users))%len(users[shard])]
		p, err := e.Entry(res, flow.WithUser(u))
		var be *flow.BlockError
		switch {
		case err == nil:
			p.Exit()
			out = append(out, Outcome{time.Since(tr.Start), shard, true})
		case errors.As(err, &be):
			out = append(out, Outcome{time.Since(tr.Start), shard, be.Reason != flow.ReasonClusterUnavailable})
		default:
			errs = append(errs, err)
		}
	}
}

// Stop ends the traffic and returns every call's outcome and the errors
// that were neither a decision nor a fallback.
func (tr *Traffic) Stop() ([]Outcome, []error) {
	close(tr.stop)
	tr.wg.Wait()
	return tr.out, tr.errs
}

// Since is t on the Traffic's time line.
func (tr *Traffic) Since(t time.Time) time.Duration { return t.Sub(tr.Start) }

// Share counts the calls ending in [from, to) on the shards keep selects,
// and how many of them Redis decided.
func Share(out []Outcome, from, to time.Duration, keep func(shard int) bool) (byRedis, total int) {
	for _, o := range out {
		if o.At >= from && o.At < to && keep(o.Shard) {
			total++
			if o.Redis {
				byRedis++
			}
		}
	}
	return byRedis, total
}

// LastFallback returns the end of the last call on a shard keep selects
// that fell back (0 if none).
func LastFallback(out []Outcome, keep func(shard int) bool) time.Duration {
	var last time.Duration
	for _, o := range out {
		if !o.Redis && keep(o.Shard) && o.At > last {
			last = o.At
		}
	}
	return last
}

// Pct is 100*a/b (0 when b is 0).
func Pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// CheckErrors fails t on calls that were neither decided nor fell back.
func CheckErrors(t testing.TB, errs []error) {
	t.Helper()
	if len(errs) > 0 {
		t.Fatalf("%d calls failed with neither a decision nor the fallback, first: %v", len(errs), errs[0])
	}
}
