package bench

import (
	"testing"
	"time"

	"github.com/flowgate/flowgate/flow"
	xrate "golang.org/x/time/rate"
)

// The workloads measure what their names say: these check it, so a
// benchmark cannot quietly time a path it did not mean to.

func TestPeersWorkloads(t *testing.T) {
	pass := peerEngine(t, nil, passRule)
	for i := range 1000 {
		p, err := pass.Entry("r")
		if err != nil {
			t.Fatalf("pass rule refused call %d: %v", i, err)
		}
		p.Exit()
	}
	block := peerEngine(t, nil, blockRule)
	primeBlocked(block)
	if _, err := block.Entry("r"); err == nil {
		t.Fatal("block rule admitted a call after priming")
	}
	l := xrate.NewLimiter(xrate.Every(time.Hour), 1)
	l.Allow()
	if l.Allow() {
		t.Fatal("x/time/rate block limiter admitted a second call")
	}
}

// TestPeersKeyedSidesSeparateUsers: every keyed side keeps one limiter per
// user, so draining one user leaves the next untouched.
func TestPeersKeyedSidesSeparateUsers(t *testing.T) {
	const n = 1000
	for _, s := range keyedSides(t, n) {
		warm(t, s.name, s.lim, n)
	}
	// A per-user limit of 1/h shows the keying: the second call of a user
	// is refused, the first of another user is not.
	e := peerEngine(t, nil, flow.Rule{ID: "u", Resource: "r", Level: flow.LevelUser,
		Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Hour})
	k := flowgateKeyed{e}
	if !k.allow("a") || k.allow("a") || !k.allow("b") {
		t.Fatal("flowgate user-level rule does not keep one limit per user")
	}
	m := &mutexMap{m: map[string]*xrate.Limiter{}}
	m.allow("a")
	m.allow("b")
	if got, want := len(m.m), 2; got != want {
		t.Fatalf("mutex map holds %d limiters, want %d", got, want)
	}
}

func TestPeerHistQuantiles(t *testing.T) {
	for _, ns := range []int64{0, 1, 15, 16, 17, 31, 32, 33, 1000, 123_456, 1 << 40} {
		i := peerBucket(ns)
		if lo, hi := peerBucketLow(i), peerBucketLow(i+1); ns < lo || ns >= hi {
			t.Errorf("%d ns in bucket %d = [%d, %d)", ns, i, lo, hi)
		}
	}
	h := new(peerHist)
	for range 99 {
		h.record(10 * time.Microsecond)
	}
	h.record(5 * time.Millisecond)
	within := func(got, want time.Duration) bool { return got >= want*15/16 && got <= want*17/16 }
	if got := h.quantile(0.5); !within(got, 10*time.Microsecond) {
		t.Errorf("p50: got %v, want about 10µs", got)
	}
	if got := h.quantile(0.99); !within(got, 10*time.Microsecond) {
		t.Errorf("p99: got %v, want about 10µs (99 of 100 calls)", got)
	}
	if got := h.quantile(1); !within(got, 5*time.Millisecond) {
		t.Errorf("p100: got %v, want about 5ms", got)
	}
}
