package cluster

import (
	"slices"
	"time"
)

// soakAnalyse turns the soak's calls into its figures: latencies (raw and
// less the machine's stalls), admissions per wall-clock second (healthy,
// outage and FLUSHALL seconds apart), policy violations and recovery times.
func soakAnalyse(f *soakFigures, calls []soakCall, faults []soakFault, control []stallSample, policy string) {
	slices.SortFunc(calls, func(a, b soakCall) int { return int(a.start - b.start) })
	f.calls = len(calls)
	lats := make([]time.Duration, len(calls))
	nets := make([]time.Duration, len(calls))
	stalls := make([]time.Duration, len(control))
	for i, s := range control {
		stalls[i] = s.late
	}
	perSec := map[int64]*[4]int{} // admitted, calls not from Redis, calls, admitted locally
	for i, c := range calls {
		lats[i] = c.took
		nets[i] = max(0, c.took-stallDuring(control, c.start, c.start+int64(c.took)))
		s := c.start / 1e9
		b := perSec[s]
		if b == nil {
			b = new([4]int)
			perSec[s] = b
		}
		b[2]++
		// Redis decided somewhere between the call's start and end (on
		// this host's clock), and so did the local fallback (at the time
		// Entry read, on the same wall seconds: clock.Origin): a call that
		// spans a second's end may belong to either window, so only calls
		// wholly inside one second count towards it.
		if c.admitted && (c.start+int64(c.took))/1e9 == s {
			b[0]++
			if !c.fromRedis {
				b[3]++
			}
		} else if c.admitted {
			f.straddling++
		}
		if !c.fromRedis {
			b[1]++
			if (policy == "deny" && c.admitted) || (policy == "allow" && !c.admitted) {
				f.policyViolations++
			}
		}
	}
	f.slowWhere = map[string]int{}
	for _, c := range calls {
		if c.took <= 50*time.Millisecond {
			continue
		}
		where := "no fault"
		for _, fl := range faults {
			if c.start+int64(c.took) >= fl.at.UnixNano() && c.start <= fl.back.UnixNano()+int64(time.Second) {
				where = fl.kind + " (or 1s after)"
			}
		}
		f.slowWhere[where]++
	}
	f.maxLat, f.p999 = quantiles(lats)
	f.netMax, f.netP999 = quantiles(nets)
	f.stallMax, f.stallP999 = quantiles(stalls)
	first, last := calls[0].start/1e9, calls[len(calls)-1].start/1e9
	// A second a fault touched: from its start to its end, and the second
	// after when it wiped the counters (those admit up to twice).
	near := func(s int64) bool {
		for _, fl := range faults {
			last := fl.back.Unix()
			switch fl.kind { // counters lost: the second after admits up to twice too
			case "kill+restart", "FLUSHALL", "kill -9 master", "lost shard":
				last++
			}
			if s >= fl.at.Unix() && s <= last {
				return true
			}
		}
		return false
	}
	wiped := func(s int64) bool {
		for _, fl := range faults {
			if fl.kind == "FLUSHALL" && (fl.at.Unix() == s || fl.back.Unix() == s) {
				return true
			}
		}
		return false
	}
	for s, b := range perSec {
		if s == first || s == last { // partial seconds
			continue
		}
		switch {
		case wiped(s):
			f.worstWiped = max(f.worstWiped, b[0])
		case b[1] > 0:
			f.outages++
			if b[0] > f.worstOutage {
				f.worstOutage, f.worstOutageLocal = b[0], b[3]
			}
		case !near(s):
			f.healthy++
			f.worstHealthy = max(f.worstHealthy, b[0])
		}
	}
	// Recovery: from the fault's end to the first call Redis decided that
	// started after it.
	for _, fl := range faults {
		i, _ := slices.BinarySearchFunc(calls, fl.back.UnixNano(), func(c soakCall, x int64) int { return int(c.start - x) })
		for ; i < len(calls); i++ {
			if calls[i].fromRedis {
				f.recovery[fl.kind] = append(f.recovery[fl.kind], time.Duration(calls[i].start-fl.back.UnixNano()))
				break
			}
		}
	}
}
