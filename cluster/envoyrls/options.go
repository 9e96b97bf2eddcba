package envoyrls

import (
	"log/slog"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// Option configures a Service.
type Option func(*options)

type options struct {
	clk     clock.Clock
	store   Store
	ts      flow.TokenServer
	leasing func(Lease) (flow.TokenServer, error)
	prefix  string
	hashTag bool
	maxVals int
	headers *HeaderNames
	log     *slog.Logger
}

func defaultOptions() options {
	return options{clk: clock.Real(), store: NewLocalStore(), maxVals: 100}
}

// WithClock sets the clock fixed windows are aligned on and resets are
// computed from. Default: clock.Real().
func WithClock(c clock.Clock) Option { return func(o *options) { o.clk = c } }

// WithStore sets where the fixed-window counters live. Default: a
// LocalStore (decisions local to this process); NewRedisStore shares them.
func WithStore(s Store) Option { return func(o *options) { o.store = s } }

// WithTokenServer decides the algorithm descriptors cluster-wide with ts
// (the Redis token server), each falling back to a local decision while ts
// cannot answer. Default: none, decisions local to this process.
func WithTokenServer(ts flow.TokenServer) Option { return func(o *options) { o.ts = ts } }

// WithLeasing gives the descriptors whose rate_limit has a lease a token
// server that leases (cluster.WithLeasing with the descriptor's period and
// max batch): newServer is called once per distinct Lease, by Load, and
// the servers it returns are the caller's to close after the Service is
// done. Without it, or without WithTokenServer, lease settings are read
// and change nothing: every call of such a descriptor goes to the token
// server, or is decided locally.
func WithLeasing(newServer func(Lease) (flow.TokenServer, error)) Option {
	return func(o *options) { o.leasing = newServer }
}

// WithKeyPrefix prefixes every counter key. Default "", as
// envoyproxy/ratelimit's CACHE_KEY_PREFIX: both name a window's counter
// alike, so a deployment moving over on the same Redis keeps its counts.
func WithKeyPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithDomainHashTag writes the fixed-window counters' keys with the domain
// in a Redis Cluster hash tag, "{domain}_key_value_…", so that every
// counter of a domain sits in one slot and a request's counters go to one
// node in one round trip (without it, one round trip per node holding one
// of them). What it costs: the whole domain's counters load one node, and
// the keys are no longer envoyproxy/ratelimit's (a deployment moving over
// starts its windows afresh). Algorithm descriptors keep the token
// server's keys. Default: off.
func WithDomainHashTag() Option { return func(o *options) { o.hashTag = true } }

// WithValueMetricCap bounds the per-value series of each limit with
// detailed_metric or value_to_metric: the first n distinct values get
// their own, later ones count under OtherValue. Default 100; n < 1 keeps
// the default.
func WithValueMetricCap(n int) Option {
	return func(o *options) {
		if n >= 1 {
			o.maxVals = n
		}
	}
}

// HeaderNames names the three response headers; empty fields take the
// defaults RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset.
type HeaderNames struct {
	Limit, Remaining, Reset string
}

// WithResponseHeaders makes every answer carry, for the descriptor closest
// to its limit (or the last one over it), its requests per unit, what is
// left of it and the seconds until its window resets, as
// envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED does. Default: off.
func WithResponseHeaders(names HeaderNames) Option {
	return func(o *options) {
		if names.Limit == "" {
			names.Limit = "RateLimit-Limit"
		}
		if names.Remaining == "" {
			names.Remaining = "RateLimit-Remaining"
		}
		if names.Reset == "" {
			names.Reset = "RateLimit-Reset"
		}
		o.headers = &names
	}
}

// WithLogger sets where the service logs; default silent.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

func (s *Service) logWarn(msg string, attrs ...any) {
	if s.cf.log != nil {
		s.cf.log.Warn(msg, attrs...)
	}
}
