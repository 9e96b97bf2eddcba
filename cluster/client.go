package cluster

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The token server's own Redis client.
//
// A decision must return within the per-call timeout whatever client the
// user built, and must never be sent twice. go-redis defaults break both:
// a failed dial is retried DialerRetries (5) times 100ms apart, stopping
// early only when the context's Done fires; a read waits ReadTimeout (3s)
// unless ContextTimeoutEnabled lets the context deadline reach the socket;
// a full pool waits PoolTimeout (4s); and a command is re-sent after a
// network error or timeout (MaxRetries 3; a ClusterClient also retries on
// another node, whatever MaxRetries says).
//
// So the server sends every command as a noRetry command (go-redis never
// re-sends one that may have reached Redis, with any client), and, from a
// *redis.Client or *redis.ClusterClient, it builds a client of its own
// from the user's options with safe overrides: ContextTimeoutEnabled on,
// one dial attempt, pool waits bounded by the per-call timeout. Clients it
// cannot rebuild (a failover client, a Ring) it uses as given, with a
// context whose Done fires at the deadline (one allocation more per call),
// and refuses them without ContextTimeoutEnabled, which nothing else can
// make up for.

// noRetry is a command go-redis must not re-send once it may have been
// written: a re-sent decision may be counted twice. MOVED and ASK
// redirects still happen (those were not run). A one-pointer struct, so
// putting it in the Cmder interface does not allocate.
type noRetry struct{ *redis.Cmd }

func (noRetry) NoRetry() bool { return true }

// do sends args as one command that is never re-sent.
func do(ctx context.Context, rdb redis.UniversalClient, args ...any) (any, error) {
	cmd := redis.NewCmd(ctx, args...)
	_ = rdb.Process(ctx, noRetry{cmd})
	return cmd.Result()
}

// conn is the client the server sends through. rebuild, when set, makes a
// fresh one from the same options (see prober: a pool that saw many dial
// failures only re-dials once a second).
type conn struct {
	rdb      redis.UniversalClient
	owned    bool // built here: Close closes it
	needDone bool // the client cannot be bounded by its options: calls use a real deadline context
	rebuild  func() redis.UniversalClient
	dial     func(context.Context) error // a raw dial to the server, to tell a dead Redis from a stale pool
}

// ownClient returns the client the server uses for rdb, or an error naming
// the setting that cannot be made safe.
func ownClient(rdb redis.UniversalClient, timeout time.Duration) (*conn, error) {
	switch c := rdb.(type) {
	case *redis.Client:
		o := *c.Options()
		if o.Addr == "FailoverClient" { // go-redis's mark: its dialer asks the sentinels
			if !o.ContextTimeoutEnabled {
				return nil, errors.New("cluster: failover client: set ContextTimeoutEnabled: true in redis.FailoverOptions, so the per-call timeout bounds reads from Redis (go-redis's ReadTimeout is 3s by default)")
			}
			return &conn{rdb: c, needDone: true}, nil
		}
		safeOptions(&o.ContextTimeoutEnabled, &o.MaxRetries, &o.DialerRetries, &o.PoolTimeout, timeout)
		// The user's client wrote its push-notification processor into
		// its options; a second client must have its own (one handler per
		// notification, so a shared one fails to register).
		o.PushNotificationProcessor = nil
		build := func() redis.UniversalClient { oo := o; return redis.NewClient(&oo) }
		dialer, network, addr := o.Dialer, o.Network, o.Addr
		return &conn{rdb: build(), owned: true, rebuild: build, dial: func(ctx context.Context) error {
			nc, err := dialer(ctx, network, addr)
			if err == nil {
				nc.Close()
			}
			return err
		}}, nil
	case *redis.ClusterClient:
		o := *c.Options()
		// go-redis keeps Addrs as its list of known nodes and appends the
		// nodes it discovers to it in place: a slice shared with the
		// user's client (or with another server built from the same
		// options) would be written by both.
		o.Addrs = slices.Clone(o.Addrs)
		safeOptions(&o.ContextTimeoutEnabled, &o.MaxRetries, &o.DialerRetries, &o.PoolTimeout, timeout)
		return &conn{rdb: redis.NewClusterClient(&o), owned: true}, nil
	case *redis.Ring:
		if !c.Options().ContextTimeoutEnabled {
			return nil, errors.New("cluster: ring client: set ContextTimeoutEnabled: true in redis.RingOptions, so the per-call timeout bounds reads from Redis")
		}
		return &conn{rdb: c, needDone: true}, nil
	default:
		return &conn{rdb: rdb, needDone: true}, nil
	}
}

// safeOptions overrides what would let a call outlive its timeout or be
// re-sent; the rest of the user's options (address, auth, TLS, pool size,
// dialer) stay.
func safeOptions(ctxTimeout *bool, maxRetries, dialerRetries *int, poolTimeout *time.Duration, timeout time.Duration) {
	*ctxTimeout = true
	*maxRetries = -1
	*dialerRetries = 1 // a refused dial fails the call now; the prober re-dials
	if *poolTimeout <= 0 || *poolTimeout > timeout {
		*poolTimeout = timeout
	}
}

// clientBox holds the current client; the prober may swap in a fresh one.
type clientBox struct {
	p atomic.Pointer[redis.UniversalClient]
}

func (b *clientBox) get() redis.UniversalClient { return *b.p.Load() }

func (b *clientBox) set(c redis.UniversalClient) { b.p.Store(&c) }
