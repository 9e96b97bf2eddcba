package cluster

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// The soak's trace (FLOWGATE_SOAK_TRACE=1): for every outage second over
// twice the limit, per engine, what Redis and the fallback admitted and
// the instance counts the fallback divided by, beside the fault timeline.
// It is how an over-admitting second is explained rather than guessed at.

// soakServer is the soak's token server: noteFailures, plus a log of the
// instance counts the engine's fallback read (only changes are kept).
type soakServer struct {
	noteFailures
	seen *countLog
}

func (s soakServer) Instances() int {
	n := s.noteFailures.Instances()
	s.seen.note(n)
	return n
}

type countAt struct {
	at int64 // unix ns
	n  int
}

type countLog struct {
	mu   sync.Mutex
	last int
	log  []countAt
}

func (c *countLog) note(n int) {
	c.mu.Lock()
	if n != c.last {
		c.last = n
		c.log = append(c.log, countAt{time.Now().UnixNano(), n})
	}
	c.mu.Unlock()
}

// during lists the counts in force during second s: the one in force at
// its start, then each change inside it.
func (c *countLog) during(s int64) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	from, to := s*1e9, (s+1)*1e9
	var out []int
	for i, ca := range c.log {
		if ca.at >= to {
			break
		}
		if ca.at >= from || i == len(c.log)-1 || c.log[i+1].at > from {
			out = append(out, ca.n)
		}
	}
	return out
}

// lowest is the lowest count read from from (unix ns) on; a large number
// when none was (the counts read before the soak began, when rules were
// loaded, are the instances' own start-up counts: not under test).
func (c *countLog) lowest(from int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	low := int(^uint(0) >> 1)
	for _, ca := range c.log {
		if ca.at >= from {
			low = min(low, ca.n)
		}
	}
	return low
}

// soakSelected reports whether FLOWGATE_SOAK_ONLY (a comma-separated list
// of "policy/algorithm", empty: all) includes name.
func soakSelected(name string) bool {
	only := os.Getenv("FLOWGATE_SOAK_ONLY")
	return only == "" || slices.Contains(strings.Split(only, ","), name)
}

// soakTrace writes the trace for the seconds of perEngine whose total
// passes bound.
func soakTrace(logf func(string, ...any), name string, bound int, calls []soakCall, faults []soakFault, seen []*countLog) {
	if os.Getenv("FLOWGATE_SOAK_TRACE") == "" {
		return
	}
	for _, fl := range faults {
		logf("%s fault %-12s %s .. %s", name, fl.kind, fl.at.Format("15:04:05.000"), fl.back.Format("15:04:05.000"))
	}
	for i, c := range seen {
		c.mu.Lock()
		var ch []string
		for _, ca := range c.log {
			ch = append(ch, fmt.Sprintf("%s:%d", time.Unix(0, ca.at).Format("15:04:05.000"), ca.n))
		}
		c.mu.Unlock()
		logf("%s engine %d's fallback read instance counts (time:count, changes only): %s", name, i, strings.Join(ch, " "))
	}
	type cell struct{ redis, local, calls, fallback int }
	per := map[int64][]cell{}
	for _, c := range calls {
		s := c.start / 1e9
		if (c.start+int64(c.took))/1e9 != s {
			continue
		}
		if per[s] == nil {
			per[s] = make([]cell, len(seen))
		}
		x := &per[s][c.engine]
		x.calls++
		if !c.fromRedis {
			x.fallback++
		}
		switch {
		case c.admitted && c.fromRedis:
			x.redis++
		case c.admitted:
			x.local++
		}
	}
	secs := make([]int64, 0, len(per))
	for s := range per {
		secs = append(secs, s)
	}
	slices.Sort(secs)
	for _, s := range secs {
		total, fallback := 0, 0
		for _, x := range per[s] {
			total += x.redis + x.local
			fallback += x.fallback
		}
		if fallback == 0 || total <= bound {
			continue
		}
		logf("%s second %s admitted %d:", name, time.Unix(s, 0).Format("15:04:05"), total)
		for i, x := range per[s] {
			logf("%s   engine %d: redis %3d local %3d (of %d calls, %d by the fallback), instance counts %v",
				name, i, x.redis, x.local, x.calls, x.fallback, seen[i].during(s))
		}
		// The calls of that second in time order, as admitted by whom.
		var line []string
		for _, c := range calls {
			if c.start/1e9 == s && c.admitted {
				src := "R"
				if !c.fromRedis {
					src = "L"
				}
				line = append(line, fmt.Sprintf("%03d%s%d", c.start%1e9/1e6, src, c.engine))
			}
		}
		logf("%s   admitted (ms, Redis/Local, engine): %s", name, strings.Join(line, " "))
	}
}
