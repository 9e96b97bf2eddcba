package flowgrpc

import (
	"context"
	"net"
	"net/netip"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/flowgate/flowgate/internal/forwarded"
)

// MetadataForwardedFor is the metadata key read from trusted peers.
const MetadataForwardedFor = "x-forwarded-for"

// ClientIP returns the address of the client of a server call: the peer's,
// or, when the peer is in trusted, the right-most untrusted address of the
// x-forwarded-for metadata, walked as flowhttp.ClientIP walks
// X-Forwarded-For. The zero
// Addr when the peer is not an IP connection (a Unix socket, bufconn).
func ClientIP(ctx context.Context, trusted []netip.Prefix) netip.Addr {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.Addr{}
	}
	a := peerAddr(p.Addr)
	if !a.IsValid() || len(trusted) == 0 {
		return a
	}
	return forwarded.Resolve(a, trusted, metadata.ValueFromIncomingContext(ctx, MetadataForwardedFor))
}

// ParseTrustedProxies parses CIDR prefixes ("10.0.0.0/8") and single
// addresses ("192.0.2.7", taken as /32 or /128) for WithTrustedProxies. It
// reports every bad entry, each prefixed with its index.
func ParseTrustedProxies(cidrs ...string) ([]netip.Prefix, error) {
	return forwarded.ParseTrusted(cidrs...)
}

// peerAddr is the peer's address without its IPv6 zone (a link-local
// peer's zone names our interface; a zoned address matches no prefix, so
// deny lists and per-IP limits would pass it by) and unmapped.
func peerAddr(addr net.Addr) netip.Addr {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return forwarded.Normal(a.AddrPort().Addr())
	case *net.UDPAddr:
		return forwarded.Normal(a.AddrPort().Addr())
	}
	if ap, err := netip.ParseAddrPort(addr.String()); err == nil {
		return forwarded.Normal(ap.Addr())
	}
	return netip.Addr{}
}

// entryOptions builds the Entry options of a call into arr.
func (cf *config) entryOptions(ctx context.Context, arr *[9]flowEntryOption, server bool) []flowEntryOption {
	opts := append(arr[:0], withContext(ctx))
	if cf.user != nil {
		if u := cf.user(ctx); u != "" {
			opts = append(opts, withUser(u))
		}
	}
	ip := ""
	switch {
	case cf.ip != nil:
		ip = cf.ip(ctx)
	case server:
		switch a := ClientIP(ctx, cf.trusted); {
		case cf.v6Bits > 0 && a.Is6():
			ip = netip.PrefixFrom(a, cf.v6Bits).Masked().String()
		case a.IsValid():
			ip = a.String()
		}
	}
	if ip != "" {
		opts = append(opts, withIP(ip))
	}
	if server {
		if p, ok := cf.priority(ctx); ok {
			opts = append(opts, withPriority(p))
		}
	}
	if cf.params != nil {
		opts = cf.appendParams(ctx, opts)
	}
	return opts
}
