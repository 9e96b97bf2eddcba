package flowhttp

import (
	"net/http"
	"strconv"
	"unicode/utf8"

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
	Type       string `json:"type"`                 // a URI naming the problem; "about:blank" from NewProblem
	Title      string `json:"title"`                // short summary; the status phrase for "about:blank"
	Status     int    `json:"status"`               // the HTTP status code: 429, 503 for an open breaker, 403 for a list
	Detail     string `json:"detail,omitempty"`     // this refusal in words: reason, level and rule
	RetryAfter int64  `json:"retryAfter,omitempty"` // whole seconds, rounded up; 0 (absent) when unknown
	Level      string `json:"level"`                // the refusing level: "global", "user", "ip", "param" or "system"
	Rule       string `json:"rule,omitempty"`       // the refusing rule's ID
}

// Status is the HTTP status of a refusal: 503 Service Unavailable when a
// circuit breaker refused (the dependency is failing, not the client
// sending too much), 403 Forbidden when an allow or deny list did (waiting
// will not help), 429 Too Many Requests otherwise.
func Status(be *flow.BlockError) int {
	switch be.Reason {
	case flow.ReasonBreakerOpen:
		return http.StatusServiceUnavailable
	case flow.ReasonDenied, flow.ReasonNotAllowed:
		return http.StatusForbidden
	}
	return http.StatusTooManyRequests
}

// NewProblem describes be as a problem document with its Status (429, 503
// for an open circuit breaker, 403 for a list). The type is "about:blank", so the
// title is the status phrase, as RFC 9457 asks.
func NewProblem(be *flow.BlockError) Problem {
	status := Status(be)
	p := Problem{
		Type:   "about:blank",
		Title:  http.StatusText(status),
		Status: status,
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

// AppendJSON appends p as JSON, members in declaration order, as
// encoding/json would write them but without reflection, because a flood of
// refusals makes this a hot path.
func (p Problem) AppendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = appendJSONString(b, p.Type)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, p.Title)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(p.Status), 10)
	if p.Detail != "" {
		b = append(b, `,"detail":`...)
		b = appendJSONString(b, p.Detail)
	}
	if p.RetryAfter != 0 {
		b = append(b, `,"retryAfter":`...)
		b = strconv.AppendInt(b, p.RetryAfter, 10)
	}
	b = append(b, `,"level":`...)
	b = appendJSONString(b, p.Level)
	if p.Rule != "" {
		b = append(b, `,"rule":`...)
		b = appendJSONString(b, p.Rule)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, <, > and & too (as encoding/json does, so the
// body is safe to embed in HTML), invalid UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029': // line separators break JavaScript
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// WriteProblem is the default BlockedHandler: status 429 (503 for an open
// circuit breaker, 403 for a list, see Status) and the Problem of be as
// application/problem+json.
func WriteProblem(w http.ResponseWriter, r *http.Request, be *flow.BlockError) {
	p := NewProblem(be)
	h := w.Header()
	// Each response gets its own values (cut from one array, one
	// allocation): a slice shared by every refusal would let one handler's
	// h[k][0] = v rewrite the header of all the others.
	vals := &[2]string{contentTypeProblemJSON, "nosniff"}
	h[headerContentType] = vals[0:1:1]
	h[headerContentTypeOptions] = vals[1:2:2]
	w.WriteHeader(p.Status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(append(p.AppendJSON(make([]byte, 0, 256)), '\n'))
	}
}
