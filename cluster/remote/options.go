package remote

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/cluster/internal/guard"
	"google.golang.org/grpc"
)

// Option configures a TokenServer.
type Option func(*config)

type config struct {
	guard.Settings
	tls       *tls.Config
	token     string
	namespace string
	byID      bool
	instances int
	dialOpts  []grpc.DialOption
	log       *slog.Logger
}

func defaults() config {
	return config{Settings: guard.Defaults(), instances: 1}
}

// WithTimeout bounds each call to a replica, failover included.
// Default 20ms (Sentinel's cluster client default).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.SetTimeout(d) } }

// WithBreaker is cluster.WithBreaker for each replica: after failures
// consecutive failed calls the replica is skipped for openFor, then probed
// by one call. Default 5 and 1s.
func WithBreaker(failures int, openFor time.Duration) Option {
	return func(c *config) { c.SetBreaker(failures, openFor) }
}

// WithClock is the clock the breakers measure time on. Default
// clock.Real().
func WithClock(clk clock.Clock) Option { return func(c *config) { c.SetClock(clk) } }

// WithTLS dials the replicas with TLS cfg (add Certificates for
// client-certificate auth). Default: plaintext.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithToken sends "authorization: Bearer <token>" with every call
// (the server's tokenrpc.WithAuthToken). Without TLS the token crosses the
// network in clear: keep that to loopback or an encrypting mesh.
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithNamespace names this client's namespace, the unit of the
// server's request cap. Default "" (the server's "default").
func WithNamespace(ns string) Option { return func(c *config) { c.namespace = ns } }

// WithRuleIDs sends rule ids only, for the server to resolve in the
// rules document it serves; the server's rule then decides, whatever the
// local copy says. Default false: rules are sent inline, so the engine's
// own rules decide, as with the embedded cluster.RedisTokenServer.
func WithRuleIDs(byID bool) Option { return func(c *config) { c.byID = byID } }

// WithInstances is what Instances reports: the number of client
// instances sharing the limits, which the engine's "local" fallback
// divides a global limit by. Default 1.
func WithInstances(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.instances = n
		}
	}
}

// WithDialOptions adds gRPC dial options (keepalive, interceptors).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, opts...) }
}

// WithLogger receives failovers and failed releases. Default: silent.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }
