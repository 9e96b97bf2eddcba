package flowhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// TransportOption configures NewTransport.
type TransportOption func(*transport)

// WithCallResource names an outgoing call's resource. Default:
// "METHOD host", e.g. "GET api.example.com".
func WithCallResource(f func(*http.Request) string) TransportOption {
	return func(t *transport) { t.resource = f }
}

// WithOverloaded decides which answers count as the backend refusing for
// overload (not accepted, for client_throttle rules; worth a retry).
// Default: status 429 or 503, or a transport error.
func WithOverloaded(f func(resp *http.Response, err error) bool) TransportOption {
	return func(t *transport) { t.overloaded = f }
}

// WithRetries retries idempotent calls (GET, HEAD, OPTIONS, PUT, DELETE, or
// a request marked with Idempotent) the backend refused for overload, under
// p (see flow.Engine.Retry): exponential backoff with jitter, Retry-After
// honoured, each retry asked of the resource's retry_budget rule. Default:
// no retries. A request with a body is retried only when it has GetBody.
func WithRetries(p flow.RetryPolicy) TransportOption {
	return func(t *transport) { t.retry, t.policy = true, p }
}

type idempotentKey struct{}

// Idempotent marks r as safe to retry whatever its method (a POST with an
// idempotency key).
func Idempotent(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), idempotentKey{}, true))
}

type transport struct {
	eng        *flow.Engine
	base       http.RoundTripper
	resource   func(*http.Request) string
	overloaded func(*http.Response, error) bool
	retry      bool
	policy     flow.RetryPolicy
	hedge      time.Duration // > 0: WithHedging
}

// NewTransport guards the calls made through base (http.DefaultTransport
// when nil) with eng (flow.Default() when nil): each call enters its
// resource ("METHOD host" by default) first, and a call refused there
// returns the *flow.BlockError from RoundTrip without reaching the backend.
// An answer of 429 or 503, or a transport error, exits the permit with an
// error matching flow.ErrOverloaded, which client_throttle rules count as
// not accepted and breakers as a failure.
func NewTransport(eng *flow.Engine, base http.RoundTripper, opts ...TransportOption) http.RoundTripper {
	if eng == nil {
		eng = flow.Default()
	}
	if base == nil {
		base = http.DefaultTransport
	}
	t := &transport{eng: eng, base: base, resource: defaultCallResource, overloaded: defaultOverloaded}
	for _, o := range opts {
		o(t)
	}
	return t
}

func defaultCallResource(r *http.Request) string { return r.Method + " " + r.URL.Hostname() }

func defaultOverloaded(resp *http.Response, err error) bool {
	if err != nil {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable
}

// overloadError is an overloaded answer as the permit's Exit sees it.
type overloadError struct {
	status int
	err    error
}

func (e *overloadError) Error() string {
	if e.err != nil {
		return "backend overloaded: " + e.err.Error()
	}
	return "backend overloaded: status " + strconv.Itoa(e.status)
}

func (e *overloadError) Unwrap() []error { return []error{flow.ErrOverloaded, e.err} }

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	res := t.resource(r)
	var resp *http.Response
	attempt := func(ctx context.Context) error {
		var err error
		if resp != nil { // an earlier overloaded answer: drop it for the next
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			resp = nil
			if r, err = rewind(r); err != nil {
				return err
			}
		}
		if t.hedge > 0 && retryable(r) {
			resp, err = t.hedged(r, res)
		} else {
			resp, err = t.base.RoundTrip(r)
		}
		if !t.overloaded(resp, err) {
			return err
		}
		oe := &overloadError{err: err}
		if resp != nil {
			oe.status = resp.StatusCode
		}
		if !t.retry || !retryable(r) {
			return oe
		}
		return &flow.RetryableError{Err: oe, After: retryAfter(resp)}
	}
	p := t.policy
	if !t.retry || !retryable(r) {
		p.Attempts = 1
	}
	err := t.eng.Retry(r.Context(), res, p, attempt)
	var oe *overloadError
	if errors.As(err, &oe) && oe.err == nil && resp != nil {
		return resp, nil // the backend's own answer, 429 or 503
	}
	if err != nil {
		if oe != nil && oe.err != nil {
			return nil, oe.err
		}
		return nil, err
	}
	return resp, nil
}

// retryable: the method is idempotent or the request is marked so, and
// its body, if any, can be sent again.
func retryable(r *http.Request) bool {
	if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
		return false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, "":
		return true
	}
	v, _ := r.Context().Value(idempotentKey{}).(bool)
	return v
}

// rewind is r ready to be sent again: a fresh body from GetBody.
func rewind(r *http.Request) (*http.Request, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return r, nil
	}
	b, err := r.GetBody()
	if err != nil {
		return nil, fmt.Errorf("flowhttp: rewinding the body to retry: %w", err)
	}
	r2 := r.Clone(r.Context())
	r2.Body = b
	return r2, nil
}

// retryAfter reads a Retry-After of delay-seconds (an HTTP date is read
// as none).
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	s, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}
