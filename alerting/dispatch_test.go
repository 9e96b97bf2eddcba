package alerting

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// blockingSink holds every Notify until release is closed or ctx ends.
type blockingSink struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingSink) Notify(ctx context.Context, _ Alert) error {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestSlowSinkBlocksNeitherEvaluationNorOtherSinks(t *testing.T) {
	slow := &blockingSink{entered: make(chan struct{}, 1), release: make(chan struct{})}
	fast := make(chan Alert, 100)
	clk := clock.NewFake(t0)
	eng := flow.NewEngine(flow.WithClock(clk))
	if err := eng.LoadRules([]flow.Rule{fixedWindow("orders", 10, time.Second)}); err != nil {
		t.Fatal(err)
	}
	al := New(eng, WithClock(clk), WithSink(slow), WithSink(SinkFunc(func(_ context.Context, a Alert) error {
		fast <- a
		return nil
	})), WithFor(0), WithOverall(false), WithRepeatInterval(10*time.Second), WithQueueSize(2),
		WithDrainTimeout(10*time.Millisecond))
	ctx := context.Background()
	if err := al.Evaluate(ctx); err != nil {
		t.Fatal(err)
	}
	// 10 evaluations, each firing or repeating: the slow sink takes the
	// first and holds it; its queue keeps 2; the other 7 are dropped.
	for i := range 10 {
		for range 10 {
			r := &rig{t: t, eng: eng}
			r.send("orders", 20)
			clk.Advance(time.Second)
		}
		if err := al.Evaluate(ctx); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-slow.entered // the worker holds the first notification
		}
		select {
		case a := <-fast:
			if a.Status != StatusFiring {
				t.Fatalf("fast sink got %s", a.Status)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("fast sink got %d of 10 notifications while the slow one hangs", i)
		}
	}
	if st := al.Stats(); st.Dropped != 7 {
		t.Errorf("Stats = %+v, want 7 dropped (the slow sink holds 1 and queues 2)", st)
	}
	// Close gives up on the slow sink after the drain timeout.
	done := make(chan struct{})
	go func() { _ = al.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on a slow sink")
	}
	if st := al.Stats(); st.Sent != 10 || st.Failed != 1 || st.Dropped != 9 {
		t.Errorf("after Close: %+v, want 10 sent (fast), the held one failed (cancelled) and the 2 queued dropped", st)
	}
}

func TestCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	eng := flow.NewEngine()
	if err := eng.LoadRules([]flow.Rule{fixedWindow("orders", 1, time.Hour)}); err != nil {
		t.Fatal(err)
	}
	got := make(chan Alert, 10)
	sink := SinkFunc(func(_ context.Context, a Alert) error { got <- a; return nil })
	al := New(eng, WithSink(sink), WithSink(NewSlogSink(slog.New(slog.DiscardHandler))), WithSink(SinkFunc(func(context.Context, Alert) error { return nil })),
		WithInterval(time.Millisecond), WithWindow(time.Second), WithFor(0), WithMinRequests(1))
	al.Start()
	al.Start() // a second Start does nothing
	// Start's loop evaluates on the real clock; keep calls coming (all but
	// the first blocked) until it fires.
	deadline := time.Now().Add(10 * time.Second)
	for fired := false; !fired; {
		if p, err := eng.Entry("orders"); err == nil {
			p.Exit()
		}
		select {
		case a := <-got:
			if a.Status != StatusFiring || a.Resource != "" && a.Resource != "orders" {
				t.Fatalf("got %+v", a)
			}
			fired = true
		case <-time.After(time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no alert from Start's loop")
			}
		}
	}
	al.mu.Lock()
	for i, q := range al.queues {
		if !q.started {
			t.Errorf("sink %d has no worker", i)
		}
	}
	al.mu.Unlock()
	if err := al.Close(); err != nil {
		t.Fatal(err)
	}
	_ = al.Close() // idempotent
	// Close waited for its goroutines; allow the runtime a moment to reap.
	deadline = time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	al.Start() // after Close: nothing
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("Start after Close started goroutines")
	}
}
