package flowhttp

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/flowgate/flowgate/flow"
)

// BlockedHandler writes the response to a refused request. The middleware
// has already set Retry-After and the rate-limit headers on w when it is
// called; the handler writes the status and the body.
type BlockedHandler func(w http.ResponseWriter, r *http.Request, be *flow.BlockError)

// Problem is the RFC 9457 problem document of a refused request, with three
// extension members: retryAfter (seconds, as in Retry-After; absent when
// unknown), level and rule.
type Problem struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail,omitempty"`
	RetryAfter int64  `json:"retryAfter,omitempty"`
	Level      string `json:"level"`
	Rule       string `json:"rule,omitempty"`
}

// NewProblem describes be as a problem document with status 429. The type is
// "about:blank", so the title is the status phrase, as RFC 9457 asks.
func NewProblem(be *flow.BlockError) Problem {
	p := Problem{
		Type:   "about:blank",
		Title:  http.StatusText(http.StatusTooManyRequests),
		Status: http.StatusTooManyRequests,
		Level:  be.Level.String(),
		Rule:   be.RuleID,
	}
	p.Detail = be.Reason + " at the " + p.Level + " level"
	if be.RuleID != "" {
		p.Detail += " by rule " + strconv.Quote(be.RuleID)
	}
	switch {
	case be.Never:
		p.Detail += "; this request can never pass"
	case be.RetryAfter > 0 && be.RetryAfter != flow.Never:
		p.RetryAfter = ceilSeconds(be.RetryAfter)
	}
	return p
}

// WriteProblem is the default BlockedHandler: status 429 and the Problem of
// be as application/problem+json.
func WriteProblem(w http.ResponseWriter, r *http.Request, be *flow.BlockError) {
	p := NewProblem(be)
	body, err := json.Marshal(p)
	if err != nil { // cannot happen for this struct; keep the status honest anyway
		w.WriteHeader(p.Status)
		return
	}
	h := w.Header()
	h[headerContentType] = []string{contentTypeProblemJSON}
	h[headerContentTypeOptions] = []string{"nosniff"}
	h["Content-Length"] = []string{strconv.Itoa(len(body) + 1)}
	w.WriteHeader(p.Status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(append(body, '\n'))
	}
}
