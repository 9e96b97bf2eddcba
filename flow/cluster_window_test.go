package flow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// windowServer is a token server counting one fixed window the way
// fixed_window.lua does, on a shared clock, that can be taken down and
// brought back with its count lost (a Redis restarted without
// persistence).
type windowServer struct {
	mu     sync.Mutex
	clk    *clock.Fake
	limit  int
	win    int64 // window index counted
	count  int
	down   bool
	asked  int // Acquire calls that reached the server
	instNo int
}

func (s *windowServer) Acquire(_ context.Context, req TokenRequest) (TokenResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	if s.down {
		return TokenResult{}, fmt.Errorf("dial: %w", ErrTokenServerUnavailable)
	}
	if w := s.clk.Now().UnixNano() / int64(time.Second); w != s.win {
		s.win, s.count = w, 0
	}
	if s.count+req.Tokens > s.limit {
		return TokenResult{Refused: 0, Remaining: float64(s.limit - s.count)}, nil
	}
	s.count += req.Tokens
	return TokenResult{Allowed: true, Refused: -1, Remaining: float64(s.limit - s.count)}, nil
}

// Release gives a refunded grant back to the window, as fixed_window.lua does.
func (s *windowServer) Release(_ context.Context, req TokenRequest, res TokenResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Refund && res.Allowed {
		s.count = max(0, s.count-req.Tokens)
	}
	return nil
}
func (s *windowServer) Instances() int { return s.instNo }

func (s *windowServer) set(down, wipe bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
	if wipe {
		s.count = 0
	}
}

// TestClusterOutageSecondBoundedWhenRedisLosesCount: the soak's 300 in one
// second against a limit of 100. Redis admits the window's 100, dies, the
// four instances' local fallbacks admit their 25 each, and Redis comes
// back within the same second with its count lost: before, it admitted
// another 100. Now each instance sees the loss in Redis's first answer
// (Remaining above the limit less what Redis had admitted to it), gives
// that grant back and keeps to its local share until the window ends; the
// next window is Redis's again.
func TestClusterOutageSecondBoundedWhenRedisLosesCount(t *testing.T) {
	clk := clock.NewFake(t0) // t0 is a whole second: the window starts here
	srv := &windowServer{clk: clk, limit: 100, instNo: 4}
	r := fw("c", "r", LevelGlobal, 100, time.Second)
	r.Cluster = &ClusterSpec{Threshold: "global", Fallback: "local"}
	var engines []*Engine
	for range 4 {
		e := NewEngine(WithClock(clk), WithTokenServer(srv))
		if err := e.LoadRules([]Rule{r}); err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	admit := func(calls int) int {
		n := 0
		for range calls {
			for _, e := range engines {
				p, err := e.Entry("r")
				switch {
				case err == nil:
					n++
					p.Exit()
				case !errors.Is(err, ErrBlocked):
					t.Fatalf("entry: %v", err)
				}
			}
		}
		return n
	}
	clk.Advance(50 * time.Millisecond)
	total := admit(40) // Redis: the whole limit
	srv.set(true, false)
	clk.Advance(250 * time.Millisecond)
	total += admit(40) // the local fallbacks: one limit shared by four
	srv.set(false, true)
	clk.Advance(300 * time.Millisecond)
	total += admit(40) // Redis is back, empty, in the same window
	if total > 2*100 {
		t.Errorf("one window admitted %d across the outage, want <= %d (Redis's 100 plus one local limit)", total, 2*100)
	}
	// The next window is decided by Redis again.
	clk.Advance(500 * time.Millisecond)
	srv.mu.Lock()
	before := srv.asked
	srv.mu.Unlock()
	if got := admit(40); got != 100 {
		t.Errorf("next window admitted %d, want 100", got)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.asked-before != 160 {
		t.Errorf("next window: %d calls reached the token server, want all 160", srv.asked-before)
	}
}

// TestClusterStaysLocalUntilWindowEnds: after an outage in a window, a
// token server that kept its count is asked again at once; one that lost
// it (Remaining above the limit less what it admitted here) is not asked
// again until the window ends.
func TestClusterStaysLocalUntilWindowEnds(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := &windowServer{clk: clk, limit: 100, instNo: 1}
	r := fw("c", "r", LevelGlobal, 100, time.Second)
	r.Cluster = &ClusterSpec{Threshold: "global", Fallback: "local"}
	e := NewEngine(WithClock(clk), WithTokenServer(srv))
	if err := e.LoadRules([]Rule{r}); err != nil {
		t.Fatal(err)
	}
	asked := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.asked
	}
	clk.Advance(100 * time.Millisecond)
	seq(t, e, "r", 2) // Redis: 2
	srv.set(true, false)
	seq(t, e, "r", 1) // the fallback
	srv.set(false, false)
	before := asked()
	seq(t, e, "r", 3)
	if n := asked() - before; n != 3 {
		t.Errorf("count kept: %d of 3 calls reached the token server, want 3", n)
	}
	srv.set(true, false)
	seq(t, e, "r", 1)
	srv.set(false, true) // back, count lost
	before = asked()
	clk.Advance(700 * time.Millisecond)
	if got := seq(t, e, "r", 3); got != "pass pass pass" {
		t.Fatalf("rest of the window: %q", got)
	}
	if n := asked() - before; n != 1 {
		t.Errorf("count lost: %d calls reached the token server in the rest of the window, want 1 (the answer that shows it)", n)
	}
	srv.mu.Lock()
	if srv.count != 0 {
		t.Errorf("the answer that showed the loss was not given back: count %d", srv.count)
	}
	srv.mu.Unlock()
	clk.Advance(200 * time.Millisecond) // the next window
	seq(t, e, "r", 3)
	if n := asked() - before; n != 4 {
		t.Errorf("next window: %d of 3 calls reached the token server, want 3", n-1)
	}
}

// TestClusterPerInstanceNeverStaysLocal: a per_instance rule's Redis limit
// is Limit times the instances, so its Remaining above Limit is no loss.
func TestClusterPerInstanceNeverStaysLocal(t *testing.T) {
	clk := clock.NewFake(t0)
	srv := &windowServer{clk: clk, limit: 400, instNo: 4}
	r := fw("c", "r", LevelGlobal, 100, time.Second)
	r.Cluster = &ClusterSpec{Threshold: "per_instance", Fallback: "local"}
	e := NewEngine(WithClock(clk), WithTokenServer(srv))
	if err := e.LoadRules([]Rule{r}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(100 * time.Millisecond)
	seq(t, e, "r", 5)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.asked != 5 {
		t.Errorf("%d of 5 calls reached the token server, want 5", srv.asked)
	}
}
