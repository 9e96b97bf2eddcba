package flowhttp

import (
	"net/http"
	"net/netip"

	"github.com/flowgate/flowgate/internal/forwarded"
)

// Option configures Middleware.
type Option func(*config)

type config struct {
	resource     func(*http.Request) string
	user         func(*http.Request) string
	ip           func(*http.Request) string
	trusted      []netip.Prefix
	proxyHeaders []string
	blocked      BlockedHandler
	// customBlocked: blocked was set by WithBlockedHandler (not WriteProblem,
	// which the middleware calls directly so the refusal stays on its stack).
	customBlocked bool
	quotaHeaders  bool
	noIdentity    bool // WithIdentityContext(false)
	v6Bits        int
	isError       func(status int) bool
	prioHeader    string // "" turns priorities off
	prioTrustAll  bool
	params        []Param
	paramMax      int
	estimate      func(*http.Request) int // WithCost
	costHeader    string                  // WithCostHeader
}

func newConfig(opts []Option) *config {
	cf := &config{blocked: WriteProblem, isError: ServerError, prioHeader: DefaultPriorityHeader, paramMax: DefaultParamMaxLen}
	for _, o := range opts {
		o(cf)
	}
	return cf
}

// WithResource names the resource of a request. Default: the ServeMux
// pattern that matched (r.Pattern, e.g. "GET /orders/{id}"), or "METHOD
// /path" when the request was not routed by a Go 1.22+ ServeMux. Keep the
// names few: every distinct name is a resource with its own statistics.
func WithResource(f func(*http.Request) string) Option {
	return func(cf *config) { cf.resource = f }
}

// WithUser names the user of a request for user-level rules (a header, a JWT
// subject, a session). "" means no user. Default: none.
func WithUser(f func(*http.Request) string) Option {
	return func(cf *config) { cf.user = f }
}

// WithIP replaces the client IP resolution (ClientIP with the trusted proxies)
// by f. "" means no IP.
func WithIP(f func(*http.Request) string) Option {
	return func(cf *config) { cf.ip = f }
}

// WithTrustedProxies lists the proxies whose forwarding headers are believed
// (see ClientIP). Default: none, so the client is always the connection's
// peer. ParseTrustedProxies builds the list from strings.
func WithTrustedProxies(prefixes ...netip.Prefix) Option {
	return func(cf *config) {
		cf.trusted = make([]netip.Prefix, len(prefixes))
		for i, p := range prefixes {
			cf.trusted[i] = forwarded.NormalPrefix(p)
		}
	}
}

// WithProxyHeaders sets which forwarding headers a trusted peer may use, in
// order of preference. Default DefaultProxyHeaders().
func WithProxyHeaders(names ...string) Option {
	return func(cf *config) {
		cf.proxyHeaders = make([]string, len(names))
		for i, n := range names {
			cf.proxyHeaders[i] = http.CanonicalHeaderKey(n)
		}
	}
}

// WithBlockedHandler replaces the response to a refused request. Default
// WriteProblem (429, or 503 for an open circuit breaker, with an RFC 9457
// problem body). h is given a copy of the refusal, its Refuser included,
// that it may keep and change.
func WithBlockedHandler(h BlockedHandler) Option {
	return func(cf *config) {
		if h != nil {
			cf.blocked, cf.customBlocked = h, true
		}
	}
}

// ServerError is the default error predicate of WithErrorStatus: 5xx.
func ServerError(status int) bool { return status >= 500 }

// WithErrorStatus sets which response statuses the permit records as
// errors (what error_ratio and error_count circuit breakers count).
// Default ServerError: 5xx. A panic is always an error.
func WithErrorStatus(isError func(status int) bool) Option {
	return func(cf *config) {
		if isError != nil {
			cf.isError = isError
		}
	}
}

// WithQuotaHeaders sets whether responses that passed carry RateLimit-Policy,
// RateLimit and X-RateLimit-* headers, from the permit's Quota. Default
// false: they cost a few allocations per request.
func WithQuotaHeaders(on bool) Option {
	return func(cf *config) { cf.quotaHeaders = on }
}

// WithIdentityContext puts the resolved Identity on the request's context
// for IdentityFrom. Default true. It costs the request copy r.WithContext
// makes (one allocation of about 380 B per request): a service whose
// handlers never ask can turn it off.
func WithIdentityContext(on bool) Option {
	return func(cf *config) { cf.noIdentity = !on }
}

// WithIPv6Prefix keys IPv6 clients by their network prefix of bits (64 is
// usual: one subscriber's allocation) instead of the full address, so a
// client cannot rotate addresses within its /64 to escape ip-level rules.
// The identity is then the prefix text, "2001:db8:1:2::/64". IPv4 clients
// are unaffected. Default 0: full addresses.
func WithIPv6Prefix(bits int) Option {
	return func(cf *config) {
		if bits > 0 && bits < 128 {
			cf.v6Bits = bits
		}
	}
}
