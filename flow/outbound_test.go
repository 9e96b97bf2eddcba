package flow

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestOutboundRulesValidWithNoOtherField(t *testing.T) {
	for _, a := range []Algorithm{AlgoClientThrottle, AlgoRetryBudget} {
		r := Rule{Resource: "GET api", Algorithm: a}
		if err := r.Validate(); err != nil {
			t.Fatalf("%v with no other field: %v", a, err)
		}
	}
	d := Rule{Resource: "x", Algorithm: AlgoClientThrottle}.WithDefaults()
	if d.K != 2 || d.Window != 2*time.Minute {
		t.Fatalf("client_throttle defaults k=%v window=%v, want 2, 2m", d.K, d.Window)
	}
	b := Rule{Resource: "x", Algorithm: AlgoRetryBudget}.WithDefaults()
	if b.Ratio != 0.2 || b.MinPerSecond != 10 || b.TTL != 10*time.Second {
		t.Fatalf("retry_budget defaults %v %v %v, want 0.2 10 10s", b.Ratio, b.MinPerSecond, b.TTL)
	}
	bad := Rule{Resource: "x", Algorithm: AlgoClientThrottle, Level: LevelUser, Limit: 5}
	if err := bad.Validate(); err == nil {
		t.Fatal("a user-level client_throttle with a limit validated")
	}
}

// TestThrottleInEngine: a backend that refuses everything gets the
// client refusing locally; the refusals carry ReasonThrottled, and calls
// accepted again bring the refusal rate back to 0.
func TestThrottleInEngine(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "thr", Resource: "GET api", Algorithm: AlgoClientThrottle})
	refused := 0
	for range 1000 {
		p, err := e.Entry("GET api")
		if err != nil {
			var be *BlockError
			if !errors.As(err, &be) || be.Reason != ReasonThrottled || be.RuleID != "thr" {
				t.Fatalf("refusal %v, want ReasonThrottled by thr", err)
			}
			refused++
			continue
		}
		p.Exit(WithError(fmt.Errorf("503: %w", ErrOverloaded)))
	}
	// With nothing accepted p = r/(r+1): nearly every call after the first few.
	if refused < 950 {
		t.Fatalf("refused %d of 1000 with the backend refusing all, want >= 950", refused)
	}
	st := e.Snapshot().Rules[0].Outbound
	if st == nil || st.Requests != 1000 || st.Accepts != 0 {
		t.Fatalf("outbound stats %+v, want 1000 requests, 0 accepts", st)
	}
	clk.Advance(3 * time.Minute) // the window forgets
	for i := range 200 {
		p, err := e.Entry("GET api")
		if err != nil {
			t.Fatalf("call %d refused with every call accepted: %v", i, err)
		}
		p.Exit(WithError(errors.New("a 404 is an answer")))
	}
}

func TestRetryBudgetInEngine(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "rb", Resource: "GET api", Algorithm: AlgoRetryBudget, MinPerSecond: 0.1, TTL: 10 * time.Second})
	// The minimum: 0.1/s over 10s is one retry with no traffic.
	if !entryOK(e, WithRetry()) || entryOK(e, WithRetry()) {
		t.Fatal("want exactly one retry from the minimum")
	}
	for range 100 { // 100 first attempts earn 20 retries
		if !entryOK(e) {
			t.Fatal("a first attempt was refused")
		}
	}
	n := 0
	for entryOK(e, WithRetry()) {
		n++
	}
	if n != 20 {
		t.Fatalf("retries after 100 first attempts = %d, want 20", n)
	}
	_, err := e.Entry("GET api", WithRetry())
	var be *BlockError
	if !errors.As(err, &be) || be.Reason != ReasonRetryBudget {
		t.Fatalf("refusal %v, want ReasonRetryBudget", err)
	}
	st := e.Snapshot().Rules[0].Outbound
	if st.FirstAttempts != 100 || st.Retries != 21 {
		t.Fatalf("stats %+v, want 100 first attempts, 21 retries", st)
	}
	clk.Advance(11 * time.Second) // everything expired: the minimum is back
	if !entryOK(e, WithRetry()) {
		t.Fatal("the minimum did not come back after the TTL")
	}
}

func entryOK(e *Engine, opts ...EntryOption) bool {
	p, err := e.Entry("GET api", opts...)
	p.Exit()
	return err == nil
}

// TestShadowThrottleLearnsAccepts: a shadow throttle refuses nothing and
// is told every answer, the ones it would have refused included, so its
// refusal probability falls back to 0 once the backend accepts again.
func TestShadowThrottleLearnsAccepts(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "thr", Resource: "GET api", Algorithm: AlgoClientThrottle, Shadow: true})
	for range 100 {
		p, err := e.Entry("GET api")
		if err != nil {
			t.Fatalf("a shadow throttle refused: %v", err)
		}
		p.Exit(WithError(ErrOverloaded))
	}
	for range 200 {
		p, _ := e.Entry("GET api")
		p.Exit()
	}
	st := e.Snapshot().Rules[0].Outbound
	if st.Requests != 300 || st.Accepts != 200 || st.RefuseProbability != 0 {
		t.Fatalf("shadow throttle %+v, want 300 requests, 200 accepts, probability 0", st)
	}
}
