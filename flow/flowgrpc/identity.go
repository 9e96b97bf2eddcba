package flowgrpc

import (
	"context"
	"net"
	"net/netip"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/flowgate/flowgate/flow/flowhttp"
)

// MetadataForwardedFor is the metadata key read from trusted peers.
const MetadataForwardedFor = "x-forwarded-for"

// ClientIP returns the address of the client of a server call: the peer's,
// or, when the peer is in trusted, the right-most untrusted address of the
// x-forwarded-for metadata (see flowhttp.ClientIP for the walk). The zero
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
	return flowhttp.ResolveForwardedFor(a, trusted, metadata.ValueFromIncomingContext(ctx, MetadataForwardedFor))
}

func peerAddr(addr net.Addr) netip.Addr {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap()
	case *net.UDPAddr:
		return a.AddrPort().Addr().Unmap()
	}
	if ap, err := netip.ParseAddrPort(addr.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// entryOptions builds the Entry options of a call into arr.
func (cf *config) entryOptions(ctx context.Context, arr *[4]flowEntryOption, server bool) []flowEntryOption {
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
	return opts
}
