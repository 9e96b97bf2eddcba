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
//
// What refused the call (Resource, Level, RuleID, Reason, Window) is read
// through the embedded *Refuser, which the refusing rule shares with every
// refusal it makes; the rest are this call's own. So a refused Entry
// allocates 64 bytes whatever the names' lengths: under a flood, refusals
// are most of what a service does.
type BlockError struct {
	*Refuser // what refused the call; read-only, shared
	// RetryAfter is the honest time until this call would have passed; 0 when
	// unknown (concurrency, cluster without an answer). Never when it cannot.
	RetryAfter time.Duration
	// Limit is the refusing rule's limit: permits per Window (in flight
	// for concurrency), after the adaptive factor.
	Limit float64
	// Remaining is the permits left at the refusing rule (usually 0).
	Remaining float64
	// Never is set when the request can never pass (e.g. more tokens than
	// the rule can ever hold).
	Never bool
	// Err is the context error when a wait was cancelled; nil otherwise.
	Err error
}

// Refuser is what refused a call: the resource entered and the refusing
// rule (or the system guard), with the reason. The engine makes one per
// rule and reason when rules load, and every BlockError of that rule and
// reason points to it: never change one. (The system guard's refusal of a
// resource that has no rules makes one for the call.)
type Refuser struct {
	Resource string        // the resource that was entered
	Level    Level         // the refusing rule's level; LevelSystem for the system guard
	RuleID   string        // the refusing rule's ID ("" when it has none or for the guard)
	Reason   string        // why: one of the Reason constants
	Window   time.Duration // the refusing rule's window (0 for the guard)
}

// Never is the RetryAfter of a request that can never pass.
const Never = time.Duration(1<<63 - 1)

// Error describes the refusal in one line.
func (e *BlockError) Error() string {
	if e.Refuser == nil { // a BlockError made by hand
		return ErrBlocked.Error()
	}
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

// newRefusers describes every refusal r can make: reason, the rule's own
// (compiledRule.reason), first, then those of a shed priority class, a cancelled
// wait, and a cluster or related-resource rule's.
func newRefusers(r *Rule, reason string) []Refuser {
	reasons := []string{reason, ReasonPriority, ReasonWaitCancelled}
	if r.Cluster != nil {
		reasons = append(reasons, ReasonClusterLimited, ReasonClusterUnavailable)
	}
	if r.RefResource != "" {
		reasons = append(reasons, ReasonRefResourceHot)
	}
	rs := make([]Refuser, len(reasons))
	for i, why := range reasons {
		rs[i] = Refuser{Resource: r.Resource, Level: r.Level, RuleID: r.ID, Reason: why, Window: r.Window}
	}
	return rs
}

// reason is BlockError.Reason when cr refuses for itself (not for a
// priority class, a cancelled wait, a cluster or a related resource).
func (cr *compiledRule) reason() string { return cr.refusers[0].Reason }

// refuser is cr's shared description of a refusal for reason.
func (cr *compiledRule) refuser(reason string) *Refuser {
	for i := range cr.refusers {
		if cr.refusers[i].Reason == reason {
			return &cr.refusers[i]
		}
	}
	// Not one newRefusers foresaw: described for this call alone.
	r := &cr.rule
	return &Refuser{Resource: r.Resource, Level: r.Level, RuleID: r.ID, Reason: reason, Window: r.Window}
}

// systemRefuser is the system guard's description of a refusal of
// resource for reason: rr's own when resource has rules (rr not nil).
func (rr *resourceRules) systemRefuser(resource, reason string) *Refuser {
	if rr != nil {
		for i := range rr.guard {
			if rr.guard[i].Reason == reason {
				return &rr.guard[i]
			}
		}
	}
	return &Refuser{Resource: resource, Level: LevelSystem, Reason: reason}
}
