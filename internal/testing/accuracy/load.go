package accuracy

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Shape says how the offered load is spread over the instances.
type Shape int

const (
	Even   Shape = iota // every instance the same share
	Skewed              // instance 0 takes 90%, the others share 10%
	Moving              // like Skewed, but the hot instance changes every MoveEvery
)

func (s Shape) String() string {
	switch s {
	case Even:
		return "even"
	case Skewed:
		return "skewed"
	case Moving:
		return "moving"
	}
	return fmt.Sprintf("Shape(%d)", int(s))
}

// MoveEvery is how long one instance stays hot in the Moving shape.
const MoveEvery = 2 * time.Second

// share is instance i's part of the load at elapsed time el, of n.
func (s Shape) share(i, n int, el time.Duration) float64 {
	if n == 1 || s == Even {
		return 1 / float64(n)
	}
	hot := 0
	if s == Moving {
		hot = int(el/MoveEvery) % n
	}
	if i == hot {
		return 0.9
	}
	return 0.1 / float64(n-1)
}

// Decide is one instance's decision for one call: true when admitted.
type Decide func() bool

// Load is a paced run: Rate calls per second over all instances for
// Duration, each instance driven by Workers goroutines so a slow decision
// (a Redis round trip) does not hold up the pacing.
type Load struct {
	Rate     float64
	Duration time.Duration
	Shape    Shape
	Workers  int // per instance; default 16
	// For instances run by separate processes: the common start (zero:
	// now), and where this process's instances stand among all of them
	// (First, Of; zero Of: these are all).
	Start     time.Time
	First, Of int
}

// Trace is what a run recorded: admission and refusal times in ns since
// the start, how many calls the pacer could not hand to a worker (the
// offered load the instances did not keep up with), and the spans in
// which a pacer woke more than StallGap late.
type Trace struct {
	Admitted []int64
	Refused  []int64
	Dropped  int64
	Stalls   [][2]int64
	Rate     float64 // the offered calls per second (Load.Rate over all instances)
	Elapsed  time.Duration
	Start    int64 // Unix ns of the start, the origin of the times above
}

// StallGap is how late a pacer's 1 ms tick may be before the span counts
// as a stall of the load generator: on a shared, loaded machine the
// process is sometimes not scheduled for tens of milliseconds, and the
// windows around such a span measure the machine, not the limiter.
const StallGap = 20 * time.Millisecond

// Run offers l to the instances (one Decide each) and records every
// outcome. Pacing is by the wall clock in 1 ms steps: each instance's
// pacer adds rate x share x elapsed to its credit and hands whole calls to
// its workers, so the offered load does not depend on how fast the
// decisions are.
func Run(l Load, inst []Decide) Trace {
	workers := l.Workers
	if workers <= 0 {
		// Enough that a hot instance at 10x a 1000/s limit keeps up
		// with every call a Redis round trip of up to 1.5 ms (leasing
		// off, a loaded machine): fewer drop offered calls.
		workers = 16
	}
	r := &run{l: l, n: len(inst), start: l.Start}
	if l.Of > 0 {
		r.n = l.Of
	}
	if r.start.IsZero() {
		r.start = time.Now()
	}
	time.Sleep(time.Until(r.start)) // separate processes begin together
	var wg sync.WaitGroup
	for i, d := range inst {
		ch := make(chan struct{}, 4096)
		for range workers {
			wg.Go(func() { r.work(d, ch) })
		}
		wg.Go(func() {
			defer close(ch)
			r.pace(l.First+i, ch)
		})
	}
	wg.Wait()
	tr := r.tr
	tr.Dropped = r.dropped.Load()
	tr.Rate = l.Rate
	if l.Of > 0 { // this process's share is not known here; the parent sets it
		tr.Rate = 0
	}
	tr.Elapsed = time.Since(r.start)
	tr.Start = r.start.UnixNano()
	return tr
}

// run is what one Run's pacers and workers share.
type run struct {
	l       Load
	n       int // instances over all processes
	start   time.Time
	dropped atomic.Int64
	mu      sync.Mutex
	tr      Trace // Admitted, Refused and Stalls, under mu
}

// work makes one call of d for each call handed over on ch, and records
// the outcomes when ch is closed.
func (r *run) work(d Decide, ch <-chan struct{}) {
	var adm, ref []int64
	for range ch {
		// The time the answer came: a call may wait for a lease another
		// call is fetching and then spend a permit of the next window, so
		// the time before the call would put it in the wrong window. A
		// stall of this process before the record is seen by the pacer
		// (Stalls) and its windows are left out.
		ok := d()
		t := int64(time.Since(r.start))
		if ok {
			adm = append(adm, t)
		} else {
			ref = append(ref, t)
		}
	}
	r.mu.Lock()
	r.tr.Admitted = append(r.tr.Admitted, adm...)
	r.tr.Refused = append(r.tr.Refused, ref...)
	r.mu.Unlock()
}

// pace hands instance i's share of the load to its workers on ch, every
// 1 ms until the load's Duration is over; a call no worker is free to
// take is dropped and counted.
func (r *run) pace(i int, ch chan<- struct{}) {
	// Pacers started together with whole credits would fire in step (32
	// instances at 25/s each: 32 calls at once every 40 ms, a burst no
	// real fleet sends and a small token bucket rightly refuses); a start
	// credit of i/n spreads their phases over one period.
	credit, last := float64(i)/float64(r.n), time.Duration(0)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		// The run's last tick is credited up to Duration, not beyond: a
		// process stalled across the end still offers every call of the
		// run's length (late, in the stall that Stalls records), so the
		// offered count is the rate's whatever the machine's load.
		el := min(time.Since(r.start), r.l.Duration)
		if el-last > StallGap {
			r.mu.Lock()
			r.tr.Stalls = append(r.tr.Stalls, [2]int64{int64(last), int64(el)})
			r.mu.Unlock()
		}
		credit += r.l.Rate * r.l.Shape.share(i, r.n, el) * (el - last).Seconds()
		last = el
		for ; credit >= 1; credit-- {
			select {
			case ch <- struct{}{}:
			default:
				r.dropped.Add(1)
			}
		}
		if el == r.l.Duration {
			return
		}
	}
}
