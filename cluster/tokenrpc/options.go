package tokenrpc

import (
	"crypto/tls"
	"log/slog"

	"github.com/flowgate/flowgate/clock"
	"google.golang.org/grpc"
)

// DefaultMaxQPS is the default cap on requests accepted per second and
// namespace: Sentinel's maxAllowedQps.
const DefaultMaxQPS = 30000

// DefaultNamespace is the namespace of a request that names none.
const DefaultNamespace = "default"

// maxNamespaces bounds the namespaces counted apart; past it, new ones
// share one counter, so a client cannot grow the server's memory.
const maxNamespaces = 1024

// Option configures a Server.
type Option func(*config)

type config struct {
	maxQPS     int64
	token      string
	tls        *tls.Config
	clk        clock.Clock
	log        *slog.Logger
	inline     bool
	grpcOpts   []grpc.ServerOption
	maxRuleSet int

	maxRuleSetBytes int
}

func defaults() config {
	return config{maxQPS: DefaultMaxQPS, clk: clock.Real(), inline: true, maxRuleSet: 4096, maxRuleSetBytes: defaultMaxRuleSetBytes}
}

// WithMaxQPS caps the Acquire calls accepted per second in each namespace;
// calls over it are answered TOO_MANY_REQUEST at once, without touching
// the token server. Releases are never capped (a refused release would
// strand concurrency permits). 0 or less turns the cap off. Default
// DefaultMaxQPS.
func WithMaxQPS(n int64) Option { return func(c *config) { c.maxQPS = n } }

// WithAuthToken requires every TokenService call to carry
// "authorization: Bearer <token>" metadata; others are refused with
// codes.Unauthenticated. The comparison takes constant time and the token
// is never logged. The health service stays open, for probes. Default: no
// auth.
func WithAuthToken(token string) Option { return func(c *config) { c.token = token } }

// WithTLS serves TLS with cfg (set ClientAuth and ClientCAs to require
// client certificates). Default: plaintext, for loopback and meshes that
// encrypt for you.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithClock is the clock the namespace cap and latency use. Default
// clock.Real().
func WithClock(clk clock.Clock) Option {
	return func(c *config) {
		if clk != nil {
			c.clk = clk
		}
	}
}

// WithLogger receives start, stop and backend failures (never tokens or
// keys). Default: silent.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithInlineRules says whether clients may send rules inline instead of
// naming rules of the served document. Default true; false makes the
// rules document the only source of limits.
func WithInlineRules(ok bool) Option { return func(c *config) { c.inline = ok } }

// WithGRPCOptions adds options to the grpc.Server (keepalive, message
// sizes...).
func WithGRPCOptions(opts ...grpc.ServerOption) Option {
	return func(c *config) { c.grpcOpts = append(c.grpcOpts, opts...) }
}
