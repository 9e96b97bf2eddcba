package flowhttp

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/flowgate/flowgate/internal/forwarded"
)

// ParseTrustedProxies parses CIDR prefixes ("10.0.0.0/8") and single
// addresses ("192.0.2.7", taken as /32 or /128) for WithTrustedProxies. It
// reports every bad entry, each prefixed with its index.
func ParseTrustedProxies(cidrs ...string) ([]netip.Prefix, error) {
	return forwarded.ParseTrusted(cidrs...)
}

// Header names read by ClientIP, in the order they are consulted.
const (
	HeaderForwarded     = "Forwarded"
	HeaderXForwardedFor = "X-Forwarded-For"
	HeaderXRealIP       = "X-Real-Ip" // canonical form of X-Real-IP
)

// DefaultProxyHeaders returns the order in which forwarding headers are read
// from a trusted peer: the first one present is used, the others are
// ignored. Set WithProxyHeaders to the one header your proxy writes when it
// does not strip the others, or a client could choose which header is
// believed. Each call returns a new slice: the default itself cannot be
// changed.
func DefaultProxyHeaders() []string { return append([]string(nil), defaultProxyHeaders[:]...) }

// defaultProxyHeaders is never written; an array, so no caller can be handed
// it to write.
var defaultProxyHeaders = [...]string{HeaderForwarded, HeaderXForwardedFor, HeaderXRealIP}

// ClientIP returns the address of the client that sent r.
//
// It is the connection's peer (r.RemoteAddr) unless the peer is in trusted.
// Then the forwarding headers named by headers (DefaultProxyHeaders() when nil;
// the first present is used) are walked from the right: trusted proxies are
// skipped and the first untrusted address is the client. When every address is
// trusted the left-most is the client. A malformed, obfuscated ("_hidden") or
// "unknown" hop ends the walk: the client is then the last trusted address
// reached, so a value the proxies did not vouch for never becomes the identity.
//
// The zero Addr means the peer is not an IP connection (a Unix socket).
func ClientIP(r *http.Request, trusted []netip.Prefix, headers []string) netip.Addr {
	a, _ := clientAddr(r, trusted, headers)
	return a
}

// clientAddr is ClientIP that also returns the text the address was read
// from (RemoteAddr or one header element), so the caller can reuse it as the
// identity string instead of formatting the address anew.
func clientAddr(r *http.Request, trusted []netip.Prefix, headers []string) (netip.Addr, string) {
	peer := forwarded.ParseHostPort(r.RemoteAddr)
	if !peer.IsValid() || len(trusted) == 0 || !forwarded.Trusted(trusted, peer) {
		return peer, r.RemoteAddr
	}
	if headers == nil {
		headers = defaultProxyHeaders[:]
	}
	for _, name := range headers {
		vals := r.Header.Values(name)
		if len(vals) == 0 {
			continue
		}
		var buf [16]forwarded.Hop
		var hops []forwarded.Hop
		switch http.CanonicalHeaderKey(name) {
		case HeaderForwarded:
			hops = forwarded.ParseForwarded(buf[:0], vals)
		case HeaderXRealIP:
			hops = append(buf[:0], forwarded.ParseHop(strings.TrimSpace(vals[len(vals)-1])))
		default: // X-Forwarded-For and look-alikes (X-Client-IP chains)
			hops = forwarded.ParseXFF(buf[:0], vals)
		}
		return forwarded.Walk(forwarded.Hop{Addr: peer, OK: true, Text: r.RemoteAddr}, trusted, hops)
	}
	return peer, r.RemoteAddr
}

// ResolveForwardedFor is ClientIP for transports other than HTTP/1 headers
// (gRPC metadata): peer is the connection's address, values the
// X-Forwarded-For values in the order received.
func ResolveForwardedFor(peer netip.Addr, trusted []netip.Prefix, values []string) netip.Addr {
	return forwarded.Resolve(peer, trusted, values)
}
