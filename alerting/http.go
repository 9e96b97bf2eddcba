package alerting

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// HTTPOption configures WebhookSink and AlertmanagerSink.
type HTTPOption func(*httpConfig)

type httpConfig struct {
	client       *http.Client
	timeout      time.Duration
	retries      int
	backoff      time.Duration
	maxBackoff   time.Duration
	header       http.Header
	clk          clock.Clock
	log          *slog.Logger
	receiver     string
	externalURL  string
	generatorURL string
	repeat       time.Duration
	jitter       func() float64 // in [0, 1); math/rand/v2's Float64 unless a test sets it
}

// Defaults of the HTTP sinks.
const (
	DefaultHTTPTimeout    = 10 * time.Second
	DefaultRetries        = 3
	DefaultBackoff        = 500 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
	DefaultReceiver       = "flowgate"
	DefaultPushRepeat     = time.Minute // Prometheus's resend delay
	pushValidityMultiple  = 4           // a pushed firing alert ends 4 repeats later unless re-sent
	maxResponseBodyToRead = 64 << 10
)

// WithHTTPClient sets the client (default: a new http.Client). Its own
// Timeout, if any, applies on top of WithTimeout.
func WithHTTPClient(c *http.Client) HTTPOption { return func(h *httpConfig) { h.client = c } }

// WithTimeout bounds each attempt (default 10s).
func WithTimeout(d time.Duration) HTTPOption { return func(h *httpConfig) { h.timeout = d } }

// WithRetries sets how many times a failed POST is retried (default 3, so
// 4 attempts). Retried: network errors, timeouts, 5xx and 429. Other 4xx
// mean the request itself is wrong and are not retried. A 429 or 503 with
// Retry-After (seconds or an HTTP date) is retried no sooner than it asks;
// one that asks for more than the backoff's cap is not retried.
func WithRetries(n int) HTTPOption { return func(h *httpConfig) { h.retries = n } }

// WithBackoff sets the wait before the first retry and its cap; each retry
// doubles it (default 500ms, capped at 10s). The sleep is drawn at random
// from the upper half of the wait ([wait/2, wait)), so that senders who
// failed together do not all retry at the same instant.
func WithBackoff(initial, max time.Duration) HTTPOption {
	return func(h *httpConfig) { h.backoff, h.maxBackoff = initial, max }
}

// WithHeader adds a request header. Header values are never logged.
func WithHeader(key, value string) HTTPOption {
	return func(h *httpConfig) {
		if h.header == nil {
			h.header = make(http.Header)
		}
		h.header.Add(key, value)
	}
}

// WithAuthorization sets the Authorization header, e.g. "Bearer <token>".
// It is never logged or put in errors.
func WithAuthorization(value string) HTTPOption {
	return func(h *httpConfig) {
		if h.header == nil {
			h.header = make(http.Header)
		}
		h.header.Set("Authorization", value)
	}
}

// WithHTTPClock sets the clock that paces retries (default clock.Real()).
func WithHTTPClock(c clock.Clock) HTTPOption { return func(h *httpConfig) { h.clk = c } }

// WithHTTPLogger logs each failed attempt at Debug, with the URL redacted.
func WithHTTPLogger(l *slog.Logger) HTTPOption { return func(h *httpConfig) { h.log = l } }

// WithReceiver sets the webhook payload's receiver (default "flowgate").
func WithReceiver(name string) HTTPOption { return func(h *httpConfig) { h.receiver = name } }

// WithExternalURL sets the webhook payload's externalURL, a link back to
// the sender (default "").
func WithExternalURL(u string) HTTPOption { return func(h *httpConfig) { h.externalURL = u } }

// WithGeneratorURL sets each alert's generatorURL, e.g. a Grafana dashboard
// (default "").
func WithGeneratorURL(u string) HTTPOption { return func(h *httpConfig) { h.generatorURL = u } }

// WithResendInterval sets how often AlertmanagerSink re-sends firing alerts
// (default 1m); each push is valid for 4 of them, so Alertmanager resolves
// an alert whose sender died. Ignored by WebhookSink.
func WithResendInterval(d time.Duration) HTTPOption { return func(h *httpConfig) { h.repeat = d } }

// poster POSTs JSON with a per-attempt timeout and retries with exponential
// backoff. Its errors and logs name the URL without userinfo or query,
// where tokens live.
type poster struct {
	httpConfig
	url      string
	redacted string
}

func newPoster(raw string, opts []HTTPOption) (*poster, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL may hold a token: do not echo it.
		return nil, errors.New("alerting: url: must be an absolute http or https URL")
	}
	p := &poster{httpConfig: httpConfig{
		client: &http.Client{}, timeout: DefaultHTTPTimeout, retries: DefaultRetries,
		backoff: DefaultBackoff, maxBackoff: DefaultMaxBackoff, clk: clock.Real(),
		receiver: DefaultReceiver, repeat: DefaultPushRepeat, jitter: rand.Float64,
	}, url: raw, redacted: redactURL(u)}
	for _, o := range opts {
		if o != nil {
			o(&p.httpConfig)
		}
	}
	var errs []error
	if p.client == nil || p.clk == nil {
		errs = append(errs, errors.New("alerting: http client and clock must not be nil"))
	}
	if p.timeout <= 0 {
		errs = append(errs, fmt.Errorf("alerting: timeout: must be > 0, got %v", p.timeout))
	}
	if p.retries < 0 {
		errs = append(errs, fmt.Errorf("alerting: retries: must be >= 0, got %d", p.retries))
	}
	if p.backoff < 0 || p.maxBackoff < p.backoff {
		errs = append(errs, fmt.Errorf("alerting: backoff: need 0 <= initial <= max, got %v, %v", p.backoff, p.maxBackoff))
	}
	if p.repeat <= 0 {
		errs = append(errs, fmt.Errorf("alerting: resend interval: must be > 0, got %v", p.repeat))
	}
	return p, errors.Join(errs...)
}

// redactURL keeps scheme, host and path: userinfo and query often carry
// credentials.
func redactURL(u *url.URL) string {
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	s := r.String()
	if u.User != nil {
		s = r.Scheme + "://REDACTED@" + r.Host + r.EscapedPath()
	}
	if u.RawQuery != "" {
		s += "?REDACTED"
	}
	return s
}

// StatusError is an HTTP response outside 2xx.
type StatusError struct {
	URL        string // redacted
	StatusCode int    // the response's status code
	// RetryAfter is the response's Retry-After on a 429 or 503, as a wait
	// from when it arrived; 0 when absent or unreadable.
	RetryAfter time.Duration
}

// Error names the redacted URL and the status code with its text.
func (e *StatusError) Error() string {
	return fmt.Sprintf("alerting: POST %s: %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
}

// Temporary reports whether a retry may succeed: 5xx and 429.
func (e *StatusError) Temporary() bool {
	return e.StatusCode >= 500 || e.StatusCode == http.StatusTooManyRequests
}

// post sends body, retrying as configured; the error wraps the last
// attempt's (a *StatusError or a redacted transport error).
func (p *poster) post(ctx context.Context, body []byte) error {
	wait := p.backoff
	for attempt := 0; ; attempt++ {
		err := p.once(ctx, body)
		if err == nil {
			return nil
		}
		var se *StatusError
		if errors.As(err, &se) && !se.Temporary() {
			return err
		}
		if ctx.Err() != nil || attempt >= p.retries {
			return fmt.Errorf("alerting: %d attempts: %w", attempt+1, err)
		}
		sleep := wait/2 + time.Duration(p.jitter()*float64(wait/2))
		if se != nil && se.RetryAfter > 0 {
			if se.RetryAfter > p.maxBackoff {
				return fmt.Errorf("alerting: %d attempts, the server asks to wait %v (more than the backoff cap %v): %w",
					attempt+1, se.RetryAfter, p.maxBackoff, err)
			}
			sleep = max(sleep, se.RetryAfter)
		}
		if p.log != nil {
			p.log.Debug("alerting: POST failed, retrying", "url", p.redacted,
				"attempt", attempt+1, "wait", sleep, "err", err)
		}
		if serr := p.clk.Sleep(ctx, sleep); serr != nil {
			return fmt.Errorf("alerting: %d attempts: %w", attempt+1, errors.Join(err, serr))
		}
		wait = min(2*wait, p.maxBackoff)
	}
}

func (p *poster) once(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("alerting: POST %s: cannot build request", p.redacted)
	}
	for k, v := range p.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// url.Error's text holds the full URL, query included.
			return &url.Error{Op: ue.Op, URL: p.redacted, Err: ue.Err}
		}
		return fmt.Errorf("alerting: POST %s: %w", p.redacted, err)
	}
	// Read a bounded amount so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBodyToRead))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &StatusError{URL: p.redacted, StatusCode: resp.StatusCode}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			se.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), p.clk.Now())
		}
		return se
	}
	return nil
}

// retryAfter reads a Retry-After value (RFC 9110: whole seconds or an
// HTTP date) as a wait from now; 0 when v is empty, unreadable or past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(math.MaxInt64/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
