package flowgrpc

import (
	"context"
	"net/netip"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Option configures the interceptors.
type Option func(*config)

type config struct {
	resource func(ctx context.Context, fullMethod string) string
	user     func(ctx context.Context) string
	ip       func(ctx context.Context) string
	trusted  []netip.Prefix
	failed   func(err error) bool
	v6Bits   int
	prioKey  string // "" turns priorities off
	prioAll  bool
	params   []MetadataParam
	paramMax int
}

func newConfig(opts []Option) *config {
	cf := &config{failed: ServerFault, prioKey: DefaultPriorityMetadata, paramMax: DefaultParamMaxLen}
	for _, o := range opts {
		o(cf)
	}
	return cf
}

// WithResource names the resource of a call. Default: the full method name.
func WithResource(f func(ctx context.Context, fullMethod string) string) Option {
	return func(cf *config) { cf.resource = f }
}

// WithUser names the caller for user-level rules ("" for none). Default:
// none. UserFromMetadata reads it from incoming metadata.
func WithUser(f func(ctx context.Context) string) Option {
	return func(cf *config) { cf.user = f }
}

// WithIP replaces the client IP resolution ("" for none). Default on the
// server: the peer's address, or x-forwarded-for from a trusted peer; on the
// client: none.
func WithIP(f func(ctx context.Context) string) Option {
	return func(cf *config) { cf.ip = f }
}

// WithTrustedProxies lists the peers whose x-forwarded-for metadata is
// believed. Default: none. ParseTrustedProxies builds the list from
// strings.
func WithTrustedProxies(prefixes ...netip.Prefix) Option {
	return func(cf *config) {
		cf.trusted = make([]netip.Prefix, len(prefixes))
		for i, p := range prefixes {
			if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
			}
			cf.trusted[i] = p.Masked()
		}
	}
}

// WithFailure decides which call errors are recorded as failures on the
// permit: what error_ratio and error_count circuit breakers count. Default
// ServerFault.
func WithFailure(f func(err error) bool) Option {
	return func(cf *config) {
		if f != nil {
			cf.failed = f
		}
	}
}

// ServerFault reports whether err is the service's fault rather than the
// caller's: codes Unknown (any non-status error), DeadlineExceeded,
// Internal, Unavailable and DataLoss.
func ServerFault(err error) bool {
	if err == nil {
		return false
	}
	switch status.Code(err) {
	case codes.Unknown, codes.DeadlineExceeded, codes.Internal, codes.Unavailable, codes.DataLoss:
		return true
	}
	return false
}

// UserFromMetadata returns a WithUser func that reads the first value of key
// from the incoming metadata (server side) or, failing that, the outgoing
// metadata (client side).
func UserFromMetadata(key string) func(ctx context.Context) string {
	return func(ctx context.Context) string {
		if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
			return v[0]
		}
		if md, ok := metadata.FromOutgoingContext(ctx); ok {
			if v := md.Get(key); len(v) > 0 {
				return v[0]
			}
		}
		return ""
	}
}

// WithIPv6Prefix keys IPv6 clients by their network prefix of bits (64 is
// usual) instead of the full address; see flowhttp.WithIPv6Prefix. Default
// 0: full addresses.
func WithIPv6Prefix(bits int) Option {
	return func(cf *config) {
		if bits > 0 && bits < 128 {
			cf.v6Bits = bits
		}
	}
}
