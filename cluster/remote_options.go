package cluster

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/flowgate/flowgate/clock"
	"google.golang.org/grpc"
)

// RemoteOption configures a RemoteTokenServer.
type RemoteOption func(*remoteConfig)

type remoteConfig struct {
	timeout   time.Duration
	failures  int
	openFor   time.Duration
	clk       clock.Clock
	tls       *tls.Config
	token     string
	namespace string
	byID      bool
	instances int
	dialOpts  []grpc.DialOption
	log       *slog.Logger
}

func remoteDefaults() remoteConfig {
	return remoteConfig{timeout: 20 * time.Millisecond, failures: 5, openFor: time.Second, clk: clock.Real(), instances: 1}
}

// WithRemoteTimeout bounds each call to a replica, failover included.
// Default 20ms (Sentinel's cluster client default).
func WithRemoteTimeout(d time.Duration) RemoteOption {
	return func(c *remoteConfig) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithRemoteBreaker is WithBreaker for each replica: after failures
// consecutive failed calls the replica is skipped for openFor, then probed
// by one call. Default 5 and 1s.
func WithRemoteBreaker(failures int, openFor time.Duration) RemoteOption {
	return func(c *remoteConfig) {
		if failures > 0 {
			c.failures = failures
		}
		if openFor > 0 {
			c.openFor = openFor
		}
	}
}

// WithRemoteClock is the clock the breakers measure time on. Default
// clock.Real().
func WithRemoteClock(clk clock.Clock) RemoteOption {
	return func(c *remoteConfig) {
		if clk != nil {
			c.clk = clk
		}
	}
}

// WithRemoteTLS dials the replicas with TLS cfg (add Certificates for
// client-certificate auth). Default: plaintext.
func WithRemoteTLS(cfg *tls.Config) RemoteOption { return func(c *remoteConfig) { c.tls = cfg } }

// WithRemoteToken sends "authorization: Bearer <token>" with every call
// (the server's tokenrpc.WithAuthToken). Without TLS the token crosses the
// network in clear: keep that to loopback or an encrypting mesh.
func WithRemoteToken(token string) RemoteOption { return func(c *remoteConfig) { c.token = token } }

// WithRemoteNamespace names this client's namespace, the unit of the
// server's request cap. Default "" (the server's "default").
func WithRemoteNamespace(ns string) RemoteOption { return func(c *remoteConfig) { c.namespace = ns } }

// WithRemoteRuleIDs sends rule ids only, for the server to resolve in the
// rules document it serves; the server's rule then decides, whatever the
// local copy says. Default false: rules are sent inline, so the engine's
// own rules decide, as with the embedded RedisTokenServer.
func WithRemoteRuleIDs(byID bool) RemoteOption { return func(c *remoteConfig) { c.byID = byID } }

// WithRemoteInstances is what Instances reports: the number of client
// instances sharing the limits, which the engine's "local" fallback
// divides a global limit by. Default 1.
func WithRemoteInstances(n int) RemoteOption {
	return func(c *remoteConfig) {
		if n > 0 {
			c.instances = n
		}
	}
}

// WithRemoteDialOptions adds gRPC dial options (keepalive, interceptors).
func WithRemoteDialOptions(opts ...grpc.DialOption) RemoteOption {
	return func(c *remoteConfig) { c.dialOpts = append(c.dialOpts, opts...) }
}

// WithRemoteLogger receives failovers and failed releases. Default: silent.
func WithRemoteLogger(l *slog.Logger) RemoteOption { return func(c *remoteConfig) { c.log = l } }
