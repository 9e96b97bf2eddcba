package flow

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDecideMatchesEntry runs the same calls through Entry on one engine and
// Decide on a twin: every outcome, and every field of every refusal, must
// be the same, on each path a refusal can take.
func TestDecideMatchesEntry(t *testing.T) {
	rules := []Rule{
		{ID: "single", Resource: "single", Algorithm: AlgoTokenBucket, Limit: 2, Window: time.Hour},
		{ID: "ip", Resource: "levels", Level: LevelIP, Algorithm: AlgoFixedWindow, Limit: 3, Window: time.Minute},
		{ID: "user", Resource: "levels", Level: LevelUser, Algorithm: AlgoSlidingLog, Limit: 2, Window: time.Minute},
		{ID: "conc", Resource: "levels", Algorithm: AlgoConcurrency, Limit: 5},
		{ID: "never", Resource: "never", Algorithm: AlgoLeakyBucket, Limit: 1, Window: time.Second},
	}
	ent, _ := newTestEngine(t, rules...)
	dec, _ := newTestEngine(t, rules...)
	calls := []struct {
		res  string
		opts []EntryOption
	}{
		{"single", nil}, {"single", nil}, {"single", nil}, {"single", nil},
		{"levels", []EntryOption{WithUser("u"), WithIP("a")}},
		{"levels", []EntryOption{WithUser("u"), WithIP("a")}},
		{"levels", []EntryOption{WithUser("u"), WithIP("a")}}, // user refuses, ip gives back
		{"levels", []EntryOption{WithUser("v"), WithIP("a")}},
		{"levels", []EntryOption{WithUser("w"), WithIP("a")}}, // ip refuses
		{"never", []EntryOption{WithTokens(3)}},               // can never pass
		{"none", nil},
	}
	for i, c := range calls {
		p, err := ent.Entry(c.res, c.opts...)
		d := dec.Decide(c.res, c.opts...)
		if (err == nil) != d.Allowed || (err != nil && p != Permit{}) {
			t.Fatalf("call %d (%s): Entry err %v, Decide allowed %v", i, c.res, err, d.Allowed)
		}
		if err == nil {
			if (p == Permit{}) != (d.Permit == Permit{}) {
				t.Fatalf("call %d: one permit is the no-rule permit, the other not", i)
			}
			continue
		}
		var be *BlockError
		if !errors.As(err, &be) {
			t.Fatalf("call %d: %v is no *BlockError", i, err)
		}
		if !sameRefusal(be, &d.Block) {
			t.Fatalf("call %d: Entry refused with %+v by %+v, Decide with %+v by %+v", i, *be, *be.Refuser, d.Block, *d.Block.Refuser)
		}
		if got := d.Err(); got == nil || got.Error() != err.Error() || !errors.Is(got, ErrBlocked) {
			t.Fatalf("call %d: d.Err() = %v, want %v", i, got, err)
		}
	}
	// The system guard refuses on its own path.
	ent.SetSystemLimit(1)
	dec.SetSystemLimit(1)
	pe, _ := ent.Entry("none")
	dd := dec.Decide("none")
	_, err := ent.Entry("single")
	d := dec.Decide("single")
	var be *BlockError
	if !errors.As(err, &be) || d.Allowed || !sameRefusal(be, &d.Block) || d.Block.Level != LevelSystem {
		t.Fatalf("system guard: Entry %v, Decide %+v", err, d)
	}
	pe.Exit()
	dd.Permit.Exit()
	if d := dec.Decide("single"); d.Allowed || d.Err() == nil {
		t.Fatal("Err of a refusal is nil")
	}
}

// TestDecideWaitCancelled: a queued wait cut short by its context is a
// refusal through Decide too, carrying the context's error.
func TestDecideWaitCancelled(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "lb", Resource: "r", Algorithm: AlgoLeakyBucket, Limit: 1, Window: time.Second, MaxWait: time.Minute})
	e.Decide("r").Permit.Exit()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := e.Decide("r", WithContext(ctx))
	if d.Allowed || d.Block.Reason != ReasonWaitCancelled || !errors.Is(d.Err(), context.Canceled) {
		t.Fatalf("got %+v, want a refusal with reason %q wrapping context.Canceled", d, ReasonWaitCancelled)
	}
	if d := (Decision{Allowed: true, Permit: Permit{}}); d.Err() != nil {
		t.Fatalf("Err of an admitted call: got %v, want nil", d.Err())
	}
}

// TestDecideBreakerOpen: an open breaker refuses through Decide as through
// Entry, with the same refusal and nothing allocated.
func TestDecideBreakerOpen(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, c breakerCase) {
		e, clk := tripped(t, c)
		clk.Advance(time.Second)
		d := e.Decide("dep")
		if d.Allowed || d.Block.Reason != ReasonBreakerOpen || d.Block.RuleID != "b" || d.Block.Resource != "dep" {
			t.Fatalf("got %+v, want refused by breaker b on dep", d)
		}
		be := refusal(t, e)
		if be == nil || !sameRefusal(be, &d.Block) {
			t.Fatalf("Entry refused with %+v, Decide with %+v", be, d.Block)
		}
		if testing.CoverMode() == "" && !raceEnabled {
			if n := testing.AllocsPerRun(100, func() { e.Decide("dep") }); n != 0 {
				t.Fatalf("Decide refused by a breaker: %v allocs, want 0", n)
			}
		}
	})
}

// sameRefusal reports whether a and b say the same, each Refuser compared
// by value (two engines make Refusers of their own).
func sameRefusal(a, b *BlockError) bool {
	x, y := *a, *b
	if x.Refuser == nil || y.Refuser == nil || *x.Refuser != *y.Refuser {
		return false
	}
	x.Refuser, y.Refuser = nil, nil
	return x == y
}
