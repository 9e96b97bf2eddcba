package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowgate/flowgate/flow"
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

// answerKey carries a call's *answer through its context, for soakServer
// to fill in.
type answerKey struct{}

// answer is what the token server told one call: when it was asked and
// answered (unix ns), whether it admitted, the Remaining, and whether the
// engine then gave the grant back (Release with Refund: in the soak's one
// rule only the lost-count check of flow does that, deciding the call
// locally instead).
type answer struct {
	sent, got int64
	answered  bool
	allowed   bool
	rem       float64
	refunded  bool
	err       string // the failed call's error, shortened
}

func (s soakServer) Acquire(ctx context.Context, req flow.TokenRequest) (flow.TokenResult, error) {
	a, _ := ctx.Value(answerKey{}).(*answer)
	if a == nil {
		return s.noteFailures.Acquire(ctx, req)
	}
	a.sent = time.Now().UnixNano()
	res, err := s.noteFailures.Acquire(ctx, req)
	a.got, a.answered, a.allowed, a.rem = time.Now().UnixNano(), err == nil, err == nil && res.Allowed, res.Remaining
	if err != nil {
		a.err = shortErr(err)
	}
	return res, err
}

func (s soakServer) Release(ctx context.Context, req flow.TokenRequest, res flow.TokenResult) error {
	if a, _ := ctx.Value(answerKey{}).(*answer); a != nil && req.Refund {
		a.refunded = true
	}
	return s.noteFailures.Release(ctx, req, res)
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

// soakRefunds traces the grants the engines gave back as lost counts (see
// answer), each classified by what the calls' answers show:
//   - "window": the call started in one second and Redis answered in the
//     next, so Redis's fresh window read as a lost count;
//   - "reordered": the engine's tally then exceeded Redis's count before
//     the call, but the grants it had taken in before the call asked did
//     not: the rest came from answers Redis gave after this one;
//   - "lost": Redis's count was below what it had admitted to this engine
//     in the window before the call asked.
func soakRefunds(logf func(string, ...any), name string, limit int, calls []soakCall, faults []soakFault) {
	if os.Getenv("FLOWGATE_SOAK_TRACE") == "" {
		return
	}
	byKind := map[string]int{}
	shown := 0
	for _, b := range calls {
		if !b.ans.refunded {
			continue
		}
		own, asked := 0, 0 // this engine's grants in b's second taken in before b's answer; before b asked
		for _, c := range calls {
			if c.engine == b.engine && c.ans.allowed && !c.ans.refunded && c.start/1e9 == b.start/1e9 && c.ans.got < b.ans.got {
				own++
				if c.ans.got < b.ans.sent {
					asked++
				}
			}
		}
		before := limit - int(b.ans.rem) - 1 // Redis's count before b
		kind := "lost"
		switch {
		case b.start/1e9 != b.ans.got/1e9:
			kind = "window"
		case asked <= before:
			kind = "reordered"
		}
		where := "no fault"
		for _, fl := range faults {
			if b.start >= fl.at.UnixNano() && b.start/1e9 <= fl.back.Unix()+1 {
				where = fl.kind
			}
		}
		byKind[where+": "+kind]++
		if shown++; shown <= 30 {
			logf("%s refund engine %d: started %s, asked +%v, answered +%v, Redis count before it %d; engine's tally then %d, %d of them before it asked (%s, during %s)",
				name, b.engine, time.Unix(0, b.start).Format("15:04:05.000000"), time.Duration(b.ans.sent-b.start), time.Duration(b.ans.got-b.start),
				before, own, asked, kind, where)
		}
	}
	logf("%s refunds as lost counts, by fault and kind: %v", name, byKind)
}

// shortErr names a failed call's error for the trace: the node error's
// cause without addresses, at most 40 bytes.
func shortErr(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	if len(msg) > 40 {
		msg = msg[:40]
	}
	return msg
}

// soakLocalCauses traces, for every second from each fault's start to a
// second after its end, what was admitted and why each local admission
// was local: "stay" (the engine kept the call local after a lost count,
// never asking), "refund" (a grant given back as a lost count), or the
// error of the call the token server failed.
func soakLocalCauses(logf func(string, ...any), name string, calls []soakCall, faults []soakFault) {
	if os.Getenv("FLOWGATE_SOAK_TRACE") == "" {
		return
	}
	for _, fl := range faults {
		for s := fl.at.Unix(); s <= fl.back.Unix()+1; s++ {
			redis, causes := 0, map[string]int{}
			for _, c := range calls {
				if c.start/1e9 != s || (c.start+int64(c.took))/1e9 != s || !c.admitted {
					continue
				}
				switch {
				case c.fromRedis:
					redis++
				case c.ans.refunded:
					causes["refund"]++
				case c.ans.sent == 0:
					causes["stay"]++
				default:
					causes[c.ans.err]++
				}
			}
			logf("%s %s second %s: Redis %d, local %v", name, fl.kind, time.Unix(s, 0).Format("15:04:05"), redis, causes)
		}
	}
}
