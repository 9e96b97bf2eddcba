package cluster

import (
	"slices"
	"sync/atomic"
	"time"
)

// The soak's control: one goroutine that does nothing but sleep 1ms and
// note how late it woke, beside the callers, in the same process. A call's
// wait for its 20ms deadline ends the same way (a timer fires, the
// goroutine waits for a CPU), so a late wake-up in the control at the time
// of a slow call is what the machine added to it, not the library: with
// other builds on the two cores the process is descheduled for tens of ms.
// The soak reports raw latencies, the control's, and each call's latency
// less the stalls the control saw while the call ran (summed: a starved
// process delays a call at each of its wake-ups, the dial, the timer, the
// reply, not once).

const stallTick = time.Millisecond

type stallSample struct {
	start, end int64 // unix ns
	late       time.Duration
}

// stallSampler runs the control goroutine until stop is set.
func stallSampler(stop *atomic.Bool, done chan<- []stallSample) {
	var out []stallSample
	for !stop.Load() {
		t0 := time.Now()
		time.Sleep(stallTick)
		took := time.Since(t0)
		out = append(out, stallSample{start: t0.UnixNano(), end: t0.UnixNano() + int64(took), late: max(0, took-stallTick)})
	}
	done <- out
}

// stallDuring is the summed lateness of the samples that overlap
// [from, to], at most to-from; samples are sorted by start and never
// overlap each other (one goroutine takes them one after another).
func stallDuring(samples []stallSample, from, to int64) time.Duration {
	// Samples last at most a few hundred ms; start a second early.
	i, _ := slices.BinarySearchFunc(samples, from-int64(time.Second), func(s stallSample, x int64) int { return int(s.start - x) })
	var sum time.Duration
	for ; i < len(samples) && samples[i].start <= to; i++ {
		if samples[i].end >= from {
			sum += samples[i].late
		}
	}
	return min(sum, time.Duration(to-from))
}

// quantiles returns the maximum and the p99.9 of ds (sorted in place).
func quantiles(ds []time.Duration) (maxD, p999 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)-1], ds[min(len(ds)-1, len(ds)*999/1000)]
}
