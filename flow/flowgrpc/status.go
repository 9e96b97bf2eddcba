package flowgrpc

import (
	"context"
	"errors"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/flowgate/flowgate/flow"
)

// ErrorInfo's reason and domain for a refused call.
const (
	ReasonRateLimited = "RATE_LIMITED"
	ReasonCircuitOpen = "CIRCUIT_OPEN"
	ReasonListRefused = "LIST_REFUSED"
	Domain            = "flowgate"
)

// ErrPanicked is recorded on the permit of a handler that panicked.
var ErrPanicked = errors.New("flowgrpc: handler panicked")

// BlockedStatus is the status of a refused call: ResourceExhausted (or
// Unavailable, ErrorInfo reason CIRCUIT_OPEN, when an open circuit breaker
// refused; PermissionDenied, reason LIST_REFUSED, when an allow or deny
// list did) with a RetryInfo detail carrying be.RetryAfter (absent when the
// wait is unknown or the call can never pass) and an ErrorInfo whose
// metadata names the resource, level and rule.
func BlockedStatus(be *flow.BlockError) *status.Status {
	code, reason := codes.ResourceExhausted, ReasonRateLimited
	switch be.Reason {
	case flow.ReasonBreakerOpen:
		code, reason = codes.Unavailable, ReasonCircuitOpen
	case flow.ReasonDenied, flow.ReasonNotAllowed:
		code, reason = codes.PermissionDenied, ReasonListRefused
	}
	st := status.New(code, be.Error())
	info := &errdetails.ErrorInfo{Reason: reason, Domain: Domain, Metadata: map[string]string{
		"resource": be.Resource, "level": be.Level.String(), "rule": be.RuleID,
	}}
	var err error
	if be.RetryAfter > 0 && !be.Never && be.RetryAfter != flow.Never {
		st, err = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(be.RetryAfter)}, info)
	} else {
		st, err = st.WithDetails(info)
	}
	if err != nil { // only if the details cannot be marshalled
		return status.New(code, be.Error())
	}
	return st
}

// blockedError turns a refusal into the error the call returns: the blocked
// status, or the context's status when the caller went away during a queued
// wait.
func blockedError(ctx context.Context, be *flow.BlockError) error {
	if be.Err != nil && ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return BlockedStatus(be).Err()
}

// RetryDelay returns the RetryInfo delay of a status error, and false when it
// carries none: what a client reads before trying again.
func RetryDelay(err error) (time.Duration, bool) {
	st, _ := status.FromError(err)
	for _, det := range st.Details() {
		if ri, isRI := det.(*errdetails.RetryInfo); isRI && ri.GetRetryDelay() != nil {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}
