// Package judge lets a test on real time tell a fault of the code under
// test from a machine too busy to say. A Meter measures how late the
// process's own goroutines wake while a try runs; Verdict turns a measured
// duration, its bound and that lateness into a pass, a failure, or "could
// not judge"; Retry repeats the tries that could not be judged and fails,
// never skips, when none could: CI must not pass by not judging.
//
// The rule: a try that misses its bound by no more than the lateness the
// process suffered meanwhile says nothing about the code (the code may have
// been waiting for a CPU), so it is tried again; one that misses it by more
// is a failure whatever the load.
package judge

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrUnjudged marks a try whose outcome the machine's load explains.
var ErrUnjudged = errors.New("judge: too busy to judge")

// Meter measures scheduling lateness: a goroutine sleeps step at a time
// and records how much later than asked it woke. Start it before the part
// of a try that is timed, Stop it after.
//
// It keeps two figures. Worst is the longest single delay: what one stall
// of the process (a stopped process, a long GC pause) cost a step of the
// code under test. Lost adds up every delay beyond one step: a process
// that gets a CPU only now and then (load 30 on two cores) wakes a few
// milliseconds late at every step, never very late at once, and Lost
// says how much of the interval it could not run, which delays a
// recovery made of many steps by about as much. Stop reports the larger.
type Meter struct {
	step  time.Duration
	worst atomic.Int64
	lost  atomic.Int64
	stop  chan struct{}
	done  chan struct{}
}

// Start starts a Meter that wakes every step (1 ms when step <= 0).
func Start(step time.Duration) *Meter {
	if step <= 0 {
		step = time.Millisecond
	}
	m := &Meter{step: step, stop: make(chan struct{}), done: make(chan struct{})}
	go m.run()
	return m
}

func (m *Meter) run() {
	defer close(m.done)
	t := time.NewTimer(m.step)
	defer t.Stop()
	for asked := time.Now().Add(m.step); ; asked = time.Now().Add(m.step) {
		select {
		case <-m.stop:
			return
		case <-t.C:
			// time.Now, not the value received: the runtime sends the
			// instant the timer was due, which hides the lateness.
			late := int64(time.Since(asked))
			if late > m.worst.Load() {
				m.worst.Store(late)
			}
			if beyond := late - int64(m.step); beyond > 0 {
				m.lost.Add(beyond)
			}
			t.Reset(m.step)
		}
	}
}

// Worst is the largest lateness seen so far.
func (m *Meter) Worst() time.Duration { return time.Duration(m.worst.Load()) }

// Lost is the sum of every delay beyond one step so far.
func (m *Meter) Lost() time.Duration { return time.Duration(m.lost.Load()) }

// Lateness is the larger of Worst and Lost: how much of a measured
// interval the process's own scheduling explains.
func (m *Meter) Lateness() time.Duration { return max(m.Worst(), m.Lost()) }

// Stop stops the meter (its goroutine has ended when Stop returns) and
// returns Lateness. It may be called more than once.
func (m *Meter) Stop() time.Duration {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
	return m.Lateness()
}

// Verdict judges a measured duration d against bound, given the lateness
// the process suffered while d was measured: nil when d < bound; an error
// wrapping ErrUnjudged when d-lateness < bound (the load explains the
// miss); otherwise an error saying by how much the bound was missed.
func Verdict(what string, d, bound, lateness time.Duration) error {
	switch {
	case d < bound:
		return nil
	case d-lateness < bound:
		return fmt.Errorf("%s took %v, bound %v, but the process woke up to %v late meanwhile: %w", what, d, bound, lateness, ErrUnjudged)
	}
	return fmt.Errorf("%s took %v, want < %v (the process woke at most %v late meanwhile)", what, d, bound, lateness)
}

// T is the part of testing.TB that Retry uses.
type T interface {
	Helper()
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Retry runs try up to tries times, until one is judged: a nil error passes,
// an error not wrapping ErrUnjudged fails t at once. A try that could not be
// judged is logged and tried again; when none could be, t fails with the
// last reason. The failure is the last line the test prints.
func Retry(t T, tries int, try func(attempt int) error) {
	t.Helper()
	var last error
	for i := range max(tries, 1) {
		err := try(i)
		switch {
		case err == nil:
			return
		case !errors.Is(err, ErrUnjudged):
			t.Fatalf("attempt %d: %v", i+1, err)
			return
		}
		last = err
		t.Logf("attempt %d could not be judged: %v", i+1, err)
	}
	t.Fatalf("no attempt of %d could be judged; last: %v", max(tries, 1), last)
}
