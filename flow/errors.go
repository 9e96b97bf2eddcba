package flow

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrBlocked is matched by every error that refuses a call:
// errors.Is(err, flow.ErrBlocked).
var ErrBlocked = errors.New("flow: blocked")

// ErrTokenServerUnavailable is what a TokenServer wraps when it cannot answer
// (network, Redis down, timeout). The engine then applies the rule's fallback.
var ErrTokenServerUnavailable = errors.New("flow: token server unavailable")

// Reasons carried by BlockError.Reason.
const (
	ReasonRateLimited        = "rate limited"
	ReasonConcurrency        = "too many in flight"
	ReasonSystemOverload     = "system overload"
	ReasonClusterLimited     = "cluster limit reached"
	ReasonClusterUnavailable = "cluster unavailable"
	ReasonWaitCancelled      = "wait cancelled"
	// ReasonPriority: the limit had room, but not the part of it the call's
	// priority class may use (see Reserve, WithPriority).
	ReasonPriority = "shed for priority"
)

// BlockError says why a call was refused. Entry returns it as *BlockError; it
// matches ErrBlocked with errors.Is, and, when a queued wait was cancelled
// (Reason ReasonWaitCancelled), also the context's error (context.Canceled or
// context.DeadlineExceeded) through Unwrap.
type BlockError struct {
	Resource string // the resource that was entered
	Level    Level  // the refusing rule's level; LevelSystem for the system guard
	RuleID   string // the refusing rule's ID ("" when it has none or for the guard)
	Reason   string // why: one of the Reason constants
	// RetryAfter is the honest time until this call would have passed; 0 when
	// unknown (concurrency, cluster without an answer). Never when it cannot.
	RetryAfter time.Duration
	// Never is set when the request can never pass (e.g. more tokens than
	// the rule can ever hold).
	Never bool
	// Limit and Window describe the refusing rule.
	Limit  float64       // permits per Window (in flight for concurrency), after the adaptive factor
	Window time.Duration // the rule's window
	// Remaining is the permits left at the refusing rule (usually 0).
	Remaining float64
	// Err is the context error when a wait was cancelled; nil otherwise.
	Err error
}

// Never is the RetryAfter of a request that can never pass.
const Never = time.Duration(1<<63 - 1)

// Error describes the refusal in one line.
func (e *BlockError) Error() string {
	s := "flow: " + strconv.Quote(e.Resource) + " blocked at " + e.Level.String() + " level"
	if e.RuleID != "" {
		s += " by rule " + strconv.Quote(e.RuleID)
	}
	s += ": " + e.Reason
	switch {
	case e.Never:
		s += " (can never pass)"
	case e.RetryAfter > 0:
		s += fmt.Sprintf(" (retry after %v)", e.RetryAfter)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is reports whether target is ErrBlocked.
func (e *BlockError) Is(target error) bool { return target == ErrBlocked }

// Unwrap returns the context error of a cancelled wait, or nil.
func (e *BlockError) Unwrap() error { return e.Err }

// onHeap copies a refusal built on the stack to the heap, for Entry's error.
func (be *BlockError) onHeap() error {
	c := *be
	return &c
}
