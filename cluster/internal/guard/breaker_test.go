package guard

import (
	"testing"
	"time"
)

func TestBreaker(t *testing.T) {
	var b Breaker
	b.Init(3, int64(time.Second), 0)
	now := int64(0)
	for i := range 2 {
		b.Failure(now, false)
		if b.Open() {
			t.Fatalf("open after %d failures, threshold 3", i+1)
		}
	}
	b.Success() // a success resets the count
	for range 3 {
		if !b.Allow(now) {
			t.Fatal("closed breaker refused")
		}
		b.Failure(now, false)
	}
	if !b.Open() || b.Allow(now+int64(999*time.Millisecond)) {
		t.Fatal("breaker not open after 3 consecutive failures")
	}
	b.Success() // a call let through before it opened, answered late
	if !b.Open() || b.Allow(now) {
		t.Fatal("a late success of a call admitted before the breaker opened closed it")
	}
	now += int64(time.Second)
	if !b.Allow(now) || b.Allow(now) {
		t.Fatal("after openFor exactly one probe must go through")
	}
	b.Failure(now, false) // the probe failed: open again for a full period
	if b.Allow(now + int64(500*time.Millisecond)) {
		t.Fatal("failed probe did not reopen the breaker")
	}
	now += int64(time.Second)
	if !b.Allow(now) {
		t.Fatal("no second probe")
	}
	b.Success()
	if b.Open() || !b.Allow(now) || !b.Allow(now) {
		t.Fatal("successful probe did not close the breaker")
	}
}

// TestBreakerTimeoutBurst: timeouts that land together (one hiccup) do not
// open the breaker however many; a streak of them lasting the span does;
// refused connections open it at the threshold at once.
func TestBreakerTimeoutBurst(t *testing.T) {
	var b Breaker
	span := int64(20 * time.Millisecond)
	b.Init(3, int64(time.Second), span)
	for range 10 {
		b.Failure(0, true)
	}
	if b.Open() {
		t.Fatal("10 timeouts at one instant opened the breaker")
	}
	b.Failure(span, true)
	if !b.Open() {
		t.Fatal("timeouts over the span did not open the breaker")
	}
	var c Breaker
	c.Init(3, int64(time.Second), span)
	for range 3 {
		c.Failure(0, false)
	}
	if !c.Open() {
		t.Fatal("3 refused connections did not open the breaker")
	}
}

// TestBreakerStarvedTimeouts: timeouts of calls sent before another call
// to the same server was answered are ours (a starved process, a queue),
// not the server's: they never open the breaker however many and however
// spread; timeouts with no answer since they were sent do, and errors
// other than timeouts always count.
func TestBreakerStarvedTimeouts(t *testing.T) {
	var b Breaker
	span := int64(20 * time.Millisecond)
	b.Init(3, int64(time.Second), span)
	b.SucceededAt(100)
	for i := range int64(50) {
		// Sent at 50..99, before the answer at 100; failing over 50 spans.
		if b.FailedCall(50+i, 100+i*span, true) || b.Open() {
			t.Fatalf("timeout %d of a call sent before an answer opened the breaker", i)
		}
	}
	for i := range int64(3) {
		// Sent after the last answer, seen 2 spans after: a late wake-up.
		if b.FailedCall(101+i*span, 101+(i+2)*span, true) || b.Open() {
			t.Fatal("a timeout seen long after its deadline (a starved process) opened the breaker")
		}
	}
	for i := range int64(3) {
		b.FailedCall(101+i*span, 101+(i+1)*span, true) // seen at its deadline
	}
	if !b.Open() {
		t.Fatal("3 timeouts over the span with no answer since they were sent did not open the breaker")
	}
	var c Breaker
	c.Init(3, int64(time.Second), span)
	c.SucceededAt(100)
	for range 3 {
		c.FailedCall(50, 100, false) // refused: counts whenever it was sent
	}
	if !c.Open() {
		t.Fatal("3 refused connections did not open the breaker")
	}
}

// TestBreakerHalfOpenProbeTimesOut: a probe that times out reopens the
// breaker even when the timeout would be ignored while closed (seen late):
// otherwise the breaker would stay half-open, letting no call through, for
// ever.
func TestBreakerHalfOpenProbeTimesOut(t *testing.T) {
	var b Breaker
	span := int64(20 * time.Millisecond)
	b.Init(1, int64(time.Second), span)
	b.FailedCall(0, 0, false)
	now := int64(time.Second)
	if !b.Allow(now) {
		t.Fatal("no probe after openFor")
	}
	late := now + 2*span
	b.FailedCall(now, late, true)
	if b.Allow(late) || !b.Allow(late+int64(time.Second)) {
		t.Fatal("a timed-out probe did not reopen the breaker for openFor")
	}
}
