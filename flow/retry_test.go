package flow

import (
	"context"
	"errors"
	"testing"
	"time"
)

var errBusy = errors.New("503")

func TestRetryBackoffAndRetryAfter(t *testing.T) {
	e, clk := newTestEngine(t, Rule{ID: "rb", Resource: "api", Algorithm: AlgoRetryBudget})
	tries := 0
	var at []time.Duration
	start := clk.Now()
	err := e.Retry(context.Background(), "api", RetryPolicy{BaseDelay: 100 * time.Millisecond}, func(context.Context) error {
		at = append(at, clk.Now().Sub(start))
		tries++
		after := time.Duration(0)
		if tries == 2 {
			after = time.Second // the backend's Retry-After
		}
		return &RetryableError{Err: errBusy, After: after}
	})
	if !errors.Is(err, errBusy) || tries != 4 {
		t.Fatalf("err %v after %d tries, want the backend's error after 4", err, tries)
	}
	// Waits: 50-100ms, then Retry-After's 1s (more than 100-200ms), then 200-400ms.
	waits := []time.Duration{at[1] - at[0], at[2] - at[1], at[3] - at[2]}
	if waits[0] < 50*time.Millisecond || waits[0] > 100*time.Millisecond ||
		waits[1] != time.Second || waits[2] < 200*time.Millisecond || waits[2] > 400*time.Millisecond {
		t.Fatalf("waits %v, want [50ms,100ms], 1s, [200ms,400ms]", waits)
	}
	if st := e.Snapshot().Rules[0].Outbound; st.FirstAttempts != 1 || st.Retries != 3 {
		t.Fatalf("budget stats %+v, want 1 first attempt, 3 retries", st)
	}
}

func TestRetryStops(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "rb", Resource: "api", Algorithm: AlgoRetryBudget, MinPerSecond: 0.1, Ratio: 0.001})
	tries := 0
	retryable := func(context.Context) error { tries++; return &RetryableError{Err: errBusy} }
	// The budget has one retry: two tries, then the backend's error.
	if err := e.Retry(context.Background(), "api", RetryPolicy{}, retryable); !errors.Is(err, errBusy) || tries != 2 {
		t.Fatalf("err %v after %d tries, want the backend's after 2 (the budget's one retry)", err, tries)
	}
	// A failure not marked retryable is not retried.
	tries = 0
	plain := func(context.Context) error { tries++; return errBusy }
	if err := e.Retry(context.Background(), "api", RetryPolicy{}, plain); err != errBusy || tries != 1 {
		t.Fatalf("err %v after %d tries, want errBusy after 1", err, tries)
	}
	// A Retry-After beyond MaxDelay ends the retries.
	tries = 0
	far := func(context.Context) error { tries++; return &RetryableError{Err: errBusy, After: time.Minute} }
	if err := e.Retry(context.Background(), "api", RetryPolicy{}, far); !errors.Is(err, errBusy) || tries != 1 {
		t.Fatalf("err %v after %d tries, want the backend's after 1", err, tries)
	}
}

func TestRetryFirstAttemptRefused(t *testing.T) {
	e, _ := newTestEngine(t, Rule{ID: "lim", Resource: "api", Algorithm: AlgoFixedWindow, Limit: 1})
	ok := func(context.Context) error { return nil }
	if err := e.Retry(context.Background(), "api", RetryPolicy{}, ok); err != nil {
		t.Fatal(err)
	}
	err := e.Retry(context.Background(), "api", RetryPolicy{}, ok)
	var be *BlockError
	if !errors.As(err, &be) || be.RuleID != "lim" {
		t.Fatalf("err %v, want the limit's BlockError", err)
	}
}
