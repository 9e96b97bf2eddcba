package flow

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// slowServer is a windowServer whose next answer can be held back after
// Redis's count took it (a goroutine that runs late), or whose next call
// reaches the count only after the clock moved on (a call that arrives in
// the next window).
type slowServer struct {
	*windowServer
	holdNext   atomic.Bool
	reached    chan struct{} // the held call was counted
	hold       chan struct{} // closed: the held answer goes back
	arriveLate time.Duration // the next call's time in transit
}

func (s *slowServer) Acquire(ctx context.Context, req TokenRequest) (TokenResult, error) {
	if d := s.arriveLate; d > 0 {
		s.arriveLate = 0
		s.clk.Advance(d)
	}
	res, err := s.windowServer.Acquire(ctx, req)
	if s.holdNext.CompareAndSwap(true, false) {
		s.reached <- struct{}{}
		<-s.hold
	}
	return res, err
}

func lostCountEngine(t *testing.T, srv TokenServer, clk *clock.Fake) *Engine {
	t.Helper()
	r := fw("c", "r", LevelGlobal, 100, time.Second)
	r.Cluster = &ClusterSpec{Threshold: "global", Fallback: "local"}
	e := NewEngine(WithClock(clk), WithTokenServer(srv))
	if err := e.LoadRules([]Rule{r}); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestClusterAnswersOutOfOrderAreNoLoss: Redis counts call A, then B, of
// one instance; B's answer is taken in first. A's answer then shows more
// room than the limit less the instance's tally, but nothing was lost: A
// keeps its grant and the next calls are Redis's. (Before, A's answer read
// as a lost count: the soak's lost-shard second had 24 local admissions
// from it.)
func TestClusterAnswersOutOfOrderAreNoLoss(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := &slowServer{windowServer: &windowServer{clk: clk, limit: 100, instNo: 4},
		reached: make(chan struct{}), hold: make(chan struct{})}
	e := lostCountEngine(t, srv, clk)
	clk.Advance(100 * time.Millisecond)
	srv.holdNext.Store(true)
	done := make(chan error)
	go func() {
		p, err := e.Entry("r")
		if err == nil {
			p.Exit()
		}
		done <- err
	}()
	<-srv.reached // A counted, its answer held
	if got := seq(t, e, "r", 1); got != "pass" {
		t.Fatalf("B: %q", got)
	}
	close(srv.hold)
	if err := <-done; err != nil {
		t.Fatalf("A: %v", err)
	}
	srv.mu.Lock()
	count, asked := srv.count, srv.asked
	srv.mu.Unlock()
	if count != 2 {
		t.Errorf("Redis's count %d after A and B, want 2 (A's grant given back as a lost count)", count)
	}
	seq(t, e, "r", 3)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if n := srv.asked - asked; n != 3 {
		t.Errorf("%d of the next 3 calls reached the token server, want 3 (the window was kept local)", n)
	}
}

// TestClusterAnswerFromNextWindowIsNoLoss: a call asked at the end of a
// window reaches Redis in the next, whose count is fresh: no loss, and the
// grant, counted by Redis in the next window, stays.
func TestClusterAnswerFromNextWindowIsNoLoss(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := &slowServer{windowServer: &windowServer{clk: clk, limit: 100, instNo: 4}}
	e := lostCountEngine(t, srv, clk)
	clk.Advance(900 * time.Millisecond)
	seq(t, e, "r", 3) // this instance's tally: 3
	srv.arriveLate = 150 * time.Millisecond
	if got := seq(t, e, "r", 1); got != "pass" {
		t.Fatalf("the late call: %q", got)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.count != 1 {
		t.Errorf("the next window's count %d, want 1 (the late call's grant given back as a lost count)", srv.count)
	}
}

// settlingServer is a windowServer that settles as fixed_window does in
// Redis: the window the call counted in takes the difference.
type settlingServer struct{ *windowServer }

func (s settlingServer) Release(ctx context.Context, req TokenRequest, res TokenResult) error {
	if !req.Settle {
		return s.windowServer.Release(ctx, req, res)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count = max(0, s.count+req.Actual-req.Tokens)
	return nil
}

// TestClusterSettledRefundsAreNoLoss: calls reserve 5 and settle at 0, so
// Redis's count of the window goes back down after each. The instance's
// tally takes each refund out too: before, the second call's answer (a
// full window's room against a tally of 5) read as a lost count and the
// rest of the window was decided locally.
func TestClusterSettledRefundsAreNoLoss(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := settlingServer{&windowServer{clk: clk, limit: 100, instNo: 4}}
	e := lostCountEngine(t, srv, clk)
	clk.Advance(100 * time.Millisecond)
	for i := range 10 {
		p, err := e.Entry("r", WithTokens(5))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		p.Exit(WithActualCost(0))
	}
	srv.mu.Lock()
	count, asked := srv.count, srv.asked
	srv.mu.Unlock()
	if asked != 10 || count != 0 {
		t.Fatalf("Redis was asked %d times (want 10: none decided locally) and holds %d (want 0)", asked, count)
	}
}
