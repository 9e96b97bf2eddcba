package flow

import (
	"sync"
	"testing"
	"time"
)

// TestStaleExitEndsNothingElse: with a concurrency limit of 1, a second
// Exit of a finished call must not end the call that now holds the slot
// (before Permit was a value, both calls shared one pooled *Permit and the
// stale Exit freed p2's slot, so a third call passed).
func TestStaleExitEndsNothingElse(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 1})
	p1, err := e.Entry("r")
	if err != nil {
		t.Fatal(err)
	}
	p1.Exit()
	p2, err := e.Entry("r")
	if err != nil {
		t.Fatal(err)
	}
	if p1.c != p2.c {
		t.Log("the second call did not reuse the first one's record; the check below still holds")
	}
	p1.Exit() // stale: must end nothing
	if p3, err := e.Entry("r"); err == nil {
		p3.Exit()
		t.Fatal("a third call passed a concurrency limit of 1 while p2 is in flight: the stale Exit freed p2's slot")
	}
	if got := e.Snapshot().Resources[0].InFlight; got != 1 {
		t.Fatalf("in flight after a stale Exit: got %d, want 1", got)
	}
	p2.Exit()
	p2.Exit()
	if got := e.Snapshot().Resources[0].InFlight; got != 0 {
		t.Fatalf("in flight after p2's Exit (twice): got %d, want 0", got)
	}
	if p, err := e.Entry("r"); err != nil {
		t.Fatalf("after p2's Exit the slot should be free: %v", err)
	} else {
		p.Exit()
	}
}

// TestDeferredAndExplicitExit: the everyday pattern, defer p.Exit() plus an
// explicit Exit on an error path, counts the call once.
func TestDeferredAndExplicitExit(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 2})
	run := func() {
		p, err := e.Entry("r")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Exit()
		p.Exit(WithError(errPanicked))
		// Another call takes the record p's call used.
		q, err := e.Entry("r")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Exit() })
	}
	run()
	st := e.Snapshot().Resources[0]
	if st.Completed != 1 || st.InFlight != 1 || st.Errors != 1 {
		t.Fatalf("completed %d, in flight %d, errors %d; want 1, 1, 1 (one call ended once, one in flight)",
			st.Completed, st.InFlight, st.Errors)
	}
}

// TestPermitCopiesExitOnce: copies of one Permit exiting at once, from many
// goroutines, end the call once; race-enabled runs check the record's
// hand-over between Exit and the next Entry.
func TestPermitCopiesExitOnce(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "c", Resource: "r", Algorithm: AlgoConcurrency, Limit: 4})
	const calls, copies = 200, 4
	var wg sync.WaitGroup
	for range calls {
		p, err := e.Entry("r")
		if err != nil {
			t.Fatal(err)
		}
		for range copies {
			wg.Add(1)
			go func(p Permit) { defer wg.Done(); p.Exit() }(p)
		}
		wg.Wait()
	}
	st := e.Snapshot().Resources[0]
	if st.Completed != calls || st.InFlight != 0 {
		t.Fatalf("completed %d, in flight %d; want %d, 0", st.Completed, st.InFlight, calls)
	}
}

// TestQuotaAndWaitedAfterExit: a Permit reads its call's quota until Exit;
// after Exit (and once its record serves another call) it reports none.
func TestQuotaAndWaitedAfterExit(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "f", Resource: "r", Algorithm: AlgoFixedWindow, Limit: 10, Window: time.Second})
	p, err := e.Entry("r")
	if err != nil {
		t.Fatal(err)
	}
	q, ok := p.Quota()
	if !ok || q.RuleID != "f" || q.Remaining != 9 {
		t.Fatalf("Quota before Exit: %+v %v, want rule f with 9 left", q, ok)
	}
	p.Exit()
	p2, _ := e.Entry("r")
	defer p2.Exit()
	if _, ok := p.Quota(); ok {
		t.Fatal("Quota of an exited Permit reported a quota (another call's?)")
	}
	if q2, ok := p2.Quota(); !ok || q2.Remaining != 8 {
		t.Fatalf("the next call's Quota: %+v %v, want 8 left", q2, ok)
	}
}

// TestZeroPermit: the zero Permit (no rule, or refused) is safe to use.
func TestZeroPermit(t *testing.T) {
	var p Permit
	p.Exit()
	p.Exit(WithError(errPanicked))
	if _, ok := p.Quota(); ok || p.Waited() != 0 {
		t.Fatal("the zero Permit reports a quota or a wait")
	}
	e := NewEngine()
	p, err := e.Entry("no rules here")
	if err != nil || p != (Permit{}) {
		t.Fatalf("a resource without rules: %v %v, want the zero Permit and no error", p, err)
	}
}
