package cluster

import (
	"log/slog"
	"time"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/cluster/internal/guard"
)

// Option configures a RedisTokenServer.
type Option func(*config)

type config struct {
	guard.Settings
	prefix       string
	log          *slog.Logger
	id           string
	beatEvery    time.Duration
	beatTTL      time.Duration
	concTTL      time.Duration
	leasing      *LeaseConfig
	maxPlanCache int
}

func defaults() config {
	return config{
		Settings:     guard.Defaults(),
		prefix:       "flowgate:",
		beatEvery:    time.Second,
		beatTTL:      3 * time.Second,
		concTTL:      30 * time.Second,
		maxPlanCache: 4096,
	}
}

// WithPrefix namespaces every key the server writes. Default "flowgate:".
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithTimeout bounds each call to Redis. Default 20ms (Sentinel's cluster
// client default). It holds whatever the client's own timeouts and
// retries: see NewRedisTokenServer.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.SetTimeout(d) } }

// WithBreaker opens the circuit after failures consecutive failed calls;
// while open, calls fail at once with an error wrapping
// flow.ErrTokenServerUnavailable, and after openFor one call probes Redis:
// success closes the circuit, failure opens it again. Default 5 and 1s.
func WithBreaker(failures int, openFor time.Duration) Option {
	return func(c *config) { c.SetBreaker(failures, openFor) }
}

// WithClock is the clock the breaker and leases measure time on. Decisions
// never use it: their time is Redis's. Default clock.Real().
func WithClock(clk clock.Clock) Option { return func(c *config) { c.SetClock(clk) } }

// WithLogger receives background failures (heartbeats, lease returns,
// renewals). Default: silent.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithInstanceID names this instance in the heartbeat set and in sliding
// log and lease members. Default: 16 random hex digits. It must be unique
// among the instances sharing the Redis.
func WithInstanceID(id string) Option {
	return func(c *config) {
		if id != "" {
			c.id = id
		}
	}
}

// WithHeartbeat sets how often this instance says it is alive and how long
// that lasts (per_instance thresholds multiply by the live count). Every
// 0 turns the background loop off: call Heartbeat yourself. Default 1s, 3s.
func WithHeartbeat(every, ttl time.Duration) Option {
	return func(c *config) {
		c.beatEvery = every
		if ttl > 0 {
			c.beatTTL = ttl
		}
	}
}

// WithConcurrencyTTL is how long a cluster concurrency permit lives unless
// released or renewed; the background loop renews the permits this
// instance holds while it runs, so only a crashed instance's permits expire.
// Default 30s.
func WithConcurrencyTTL(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.concTTL = d
		}
	}
}

// WithLeasing lets the server take permits in batches and spend them
// locally; see LeaseConfig for where that is sound and what it costs.
func WithLeasing(lc LeaseConfig) Option {
	return func(c *config) {
		lc = lc.withDefaults()
		c.leasing = &lc
	}
}
