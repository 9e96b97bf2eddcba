package flowhttp

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// Response header names written by the middleware.
const (
	HeaderRetryAfter         = "Retry-After"
	HeaderRateLimitPolicy    = "Ratelimit-Policy" // canonical form of RateLimit-Policy
	HeaderRateLimit          = "Ratelimit"        // canonical form of RateLimit
	HeaderXRateLimitLimit    = "X-Ratelimit-Limit"
	HeaderXRateLimitRemain   = "X-Ratelimit-Remaining"
	HeaderXRateLimitReset    = "X-Ratelimit-Reset"
	contentTypeProblemJSON   = "application/problem+json"
	headerContentType        = "Content-Type"
	headerContentTypeOptions = "X-Content-Type-Options"
)

// ceilSeconds rounds d up to whole seconds: 0 for d <= 0, at least 1 otherwise.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// floorCount turns a permit count into the integer the header grammar needs:
// floored, never negative, saturated.
func floorCount(f float64) int64 {
	switch {
	case !(f > 0): // also NaN
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(f)
}

// policy is a rule's quota expressed as the draft's integer q per w seconds.
// A window that is not whole seconds is stretched to the next whole second
// and q scaled with it (5 per 500ms is q=10;w=1), since w is an integer. A
// window of 0 (concurrency) has no w.
type policy struct {
	name string
	q, w int64
}

func makePolicy(name string, limit float64, window time.Duration) policy {
	p := policy{name: name}
	switch {
	case window <= 0:
		p.q = floorCount(limit)
	case window%time.Second == 0:
		p.q, p.w = floorCount(limit), int64(window/time.Second)
	default:
		p.w = ceilSeconds(window)
		p.q = floorCount(limit * float64(time.Duration(p.w)*time.Second) / float64(window))
	}
	return p
}

// appendSFString appends s as an RFC 9651 structured-field string: quotes and
// backslashes escaped, bytes outside printable ASCII replaced by '?'.
func appendSFString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c > 0x7e:
			b = append(b, '?')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// appendPolicy appends `"name";q=100;w=60`.
func appendPolicy(b []byte, p policy) []byte {
	b = appendSFString(b, p.name)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, p.q, 10)
	if p.w > 0 {
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, p.w, 10)
	}
	return b
}

// appendRateLimit appends `"name";r=50;t=30`; t < 0 (unknown) is left out.
func appendRateLimit(b []byte, name string, r, t int64) []byte {
	b = appendSFString(b, name)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, r, 10)
	if t >= 0 {
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, t, 10)
	}
	return b
}

// headerBatch records where each header value ends in one byte buffer (kept
// by the caller, on its stack), so that flush installs every value cut from
// one string, with their []string slices cut from one array: two
// allocations however many fields there are.
type headerBatch struct {
	keys [6]string
	ends [6]int
	n    int
}

// end closes the value appended to b since the last end, for key.
func (x *headerBatch) end(key string, b []byte) {
	x.keys[x.n], x.ends[x.n] = key, len(b)
	x.n++
}

func (x *headerBatch) flush(h http.Header, b []byte) {
	if x.n == 0 {
		return
	}
	s := string(b)
	vals := make([]string, x.n)
	start := 0
	for i := 0; i < x.n; i++ {
		vals[i] = s[start:x.ends[i]]
		start = x.ends[i]
		// A full slice expression: a later Header.Add must not write into
		// the neighbour's element.
		h[x.keys[i]] = vals[i : i+1 : i+1]
	}
}

// quotaFields are the values of one decision's rate-limit headers.
type quotaFields struct {
	name      string
	limit     float64
	window    time.Duration
	remaining float64
	reset     int64 // seconds; < 0 unknown
}

// add appends RateLimit-Policy, RateLimit and the legacy X-RateLimit-Limit,
// -Remaining and -Reset (delta seconds, like RateLimit's t, not a Unix time).
func (f quotaFields) add(b []byte, x *headerBatch) []byte {
	p := makePolicy(f.name, f.limit, f.window)
	r := floorCount(f.remaining)
	b = appendPolicy(b, p)
	x.end(HeaderRateLimitPolicy, b)
	b = appendRateLimit(b, f.name, r, f.reset)
	x.end(HeaderRateLimit, b)
	b = strconv.AppendInt(b, p.q, 10)
	x.end(HeaderXRateLimitLimit, b)
	b = strconv.AppendInt(b, r, 10)
	x.end(HeaderXRateLimitRemain, b)
	if f.reset >= 0 {
		b = strconv.AppendInt(b, f.reset, 10)
		x.end(HeaderXRateLimitReset, b)
	}
	return b
}

// policyName names a rule in the headers: its id, or the level when the
// refusal came from no rule (the system guard).
func policyName(ruleID string, l flow.Level) string {
	if ruleID != "" {
		return ruleID
	}
	return l.String()
}

// SetBlockedHeaders writes the headers of a refusal to h: Retry-After (whole
// seconds rounded up, at least 1; left out when the wait is unknown or the
// call can never pass), and, when the refusing rule's limit is known,
// RateLimit-Policy, RateLimit (t = the retry delay) and the legacy
// X-RateLimit-* fields.
func SetBlockedHeaders(h http.Header, be *flow.BlockError) {
	var arr [192]byte
	var x headerBatch
	b := arr[:0]
	reset := int64(-1)
	if !be.Never && be.RetryAfter > 0 && be.RetryAfter != flow.Never {
		reset = ceilSeconds(be.RetryAfter)
		b = strconv.AppendInt(b, reset, 10)
		x.end(HeaderRetryAfter, b)
	}
	if be.Limit > 0 {
		window := be.Window
		if be.Reason == flow.ReasonConcurrency {
			window = 0 // Limit is calls in flight, not per window
		}
		b = quotaFields{
			name:      policyName(be.RuleID, be.Level),
			limit:     be.Limit,
			window:    window,
			remaining: be.Remaining,
			reset:     reset,
		}.add(b, &x)
	}
	x.flush(h, b)
}

// SetQuotaHeaders writes RateLimit-Policy, RateLimit and the legacy
// X-RateLimit-* fields of a call that passed, from its permit's Quota; t is
// the time until the quota is fully restored, rounded up.
func SetQuotaHeaders(h http.Header, q flow.Quota) {
	if q.Limit <= 0 {
		return
	}
	var arr [192]byte
	var x headerBatch
	b := arr[:0]
	b = quotaFields{
		name:      q.RuleID,
		limit:     q.Limit,
		window:    q.Window,
		remaining: q.Remaining,
		reset:     ceilSeconds(q.Reset),
	}.add(b, &x)
	x.flush(h, b)
}
