package clustertest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/internal/testing/judge"
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

// Warm calls every user through every engine until Redis decides each
// (connections dialled, slot maps and scripts loaded), so that the
// traffic's first second measures a warm cluster. It fails t after 30s.
func Warm(t testing.TB, engines []*flow.Engine, res string, users [][]string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, e := range engines {
		for _, us := range users {
			for _, u := range us {
				for {
					p, err := e.Entry(res, flow.WithUser(u))
					if err == nil {
						p.Exit()
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("user %s not decided by Redis 30s into the warm-up: %v", u, err)
					}
					time.Sleep(10 * time.Millisecond) // polling a cluster that starts up
				}
			}
		}
	}
}

// Recovered returns the earliest time from on after which the calls on
// the shards keep selects fall back no more than the others do (at most
// 1%, or twice the others' share): when they are back on Redis, told from
// the scattered timeouts of a loaded host. It returns -1 if never.
func Recovered(out []Outcome, from time.Duration, keep func(shard int) bool) time.Duration {
	sorted := slices.Clone(out)
	slices.SortFunc(sorted, func(a, b Outcome) int { return cmp.Compare(a.At, b.At) })
	// Suffix counts: calls and fallbacks at or after index i, per side.
	n := len(sorted)
	inT, inF, outT, outF := make([]int, n+1), make([]int, n+1), make([]int, n+1), make([]int, n+1)
	for i := n - 1; i >= 0; i-- {
		inT[i], inF[i], outT[i], outF[i] = inT[i+1], inF[i+1], outT[i+1], outF[i+1]
		o := sorted[i]
		if keep(o.Shard) {
			inT[i]++
			if !o.Redis {
				inF[i]++
			}
		} else {
			outT[i]++
			if !o.Redis {
				outF[i]++
			}
		}
	}
	for i, o := range sorted {
		if o.At < from || !keep(o.Shard) || !o.Redis {
			continue
		}
		fell := 100 - Pct(inT[i]-inF[i], inT[i])
		others := 100 - Pct(outT[i]-outF[i], outT[i])
		if fell <= max(1, 2*others) {
			return o.At
		}
	}
	return -1
}

// Base is the calls Redis decided, and all calls, in a stretch with no
// fault: before it, and after the cluster recovered.
type Base struct{ ByRedis, Total int }

// fell is the share of a Base that fell back, in percent.
func (b Base) fell() float64 { return 100 - Pct(b.ByRedis, b.Total) }

// AllFellBack reports whether every one of total calls on a dead master's
// keys fell back (byRedis of them did not). A dead master answers nothing,
// so a key decided by Redis in the window is a call the test placed on the
// wrong side of the kill or of a promotion it saw late (a loaded machine):
// the try is run again, and a miss fails t on the last try.
func AllFellBack(t testing.TB, last bool, byRedis, total int) bool {
	t.Helper()
	if total == 0 || byRedis != 0 {
		Miss(t, last, "victim's keys during the outage: %d/%d decided by Redis, want all %d by the fallback", byRedis, total, total)
		return false
	}
	return true
}

// Judge reports whether at least 99% of total calls were decided by
// Redis or, on a host so loaded that calls time out with no fault at all,
// the share that fell back is at most twice the largest share that fell
// back in the fault-free stretches bases: the fault must add nothing the
// load does not. A miss fails t on the last try, and is logged before it
// (see Retry).
func Judge(t testing.TB, last bool, what string, byRedis, total int, bases ...Base) bool {
	t.Helper()
	worst := 0.0
	for _, b := range bases {
		worst = max(worst, b.fell())
	}
	fell := 100 - Pct(byRedis, total)
	if total > 0 && fell <= max(1, 2*worst) {
		return true
	}
	Miss(t, last, "%s: %d/%d (%.2f%%) decided by Redis, want >= 99%% (or a fallback share <= twice the %.2f%% of the healthy cluster)",
		what, byRedis, total, 100-fell, worst)
	return false
}

// Miss fails t on the last try, and logs before it.
func Miss(t testing.TB, last bool, format string, args ...any) {
	t.Helper()
	if last {
		t.Errorf(format, args...)
	} else {
		t.Logf("this try: "+format, args...)
	}
}

// Judgeable reports whether every fault-free stretch had at least 90% of
// its calls decided by Redis, so that the fault's figures mean something;
// below it the host is too loaded and the try is run again (on the last
// try it is judged all the same).
func Judgeable(t testing.TB, last bool, bases ...Base) bool {
	for _, b := range bases {
		if b.Total == 0 || b.fell() > 10 {
			t.Logf("with no fault only %d/%d calls were decided by Redis: the host is too loaded to judge this try", b.ByRedis, b.Total)
			return last
		}
	}
	return true
}

// Retry runs try until it passes (returns true), three times at most; the
// last try is told it is the last, and fails t on what it misses. Bounds on
// real time (the share decided by Redis, how soon keys are back) depend on
// a shared host's load: a try that misses one is run again, while a fault
// that breaks them misses every try. A try that missed while the process
// itself ran at least lateTry late (judge.Meter: the scheduler, not the
// code under test, explains a miss of that size against the 1 s bounds)
// does not count against the three, up to six tries in all.
func Retry(t testing.TB, try func(last bool) bool) {
	t.Helper()
	const judged, most = 3, 6
	left := judged
	for i := 0; i < most && left > 0; i++ {
		last := left == 1 || i == most-1
		m := judge.Start(time.Millisecond)
		ok := try(last)
		late := m.Stop()
		if ok || last {
			return
		}
		if late >= lateTry {
			t.Logf("try %d missed while the process ran %v late: not counted", i+1, late)
			continue
		}
		left--
	}
}

// lateTry is the lateness that makes a shard try's miss the host's.
const lateTry = 100 * time.Millisecond
