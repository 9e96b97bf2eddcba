package flowhttp

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies parses CIDR prefixes ("10.0.0.0/8") and single
// addresses ("192.0.2.7", taken as /32 or /128) for WithTrustedProxies. It
// reports every bad entry, each prefixed with its index.
func ParseTrustedProxies(cidrs ...string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(cidrs))
	var errs []error
	for i, s := range cidrs {
		s = strings.TrimSpace(s)
		var p netip.Prefix
		var err error
		if strings.Contains(s, "/") {
			p, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(s); err == nil {
				if a.Zone() != "" {
					err = errors.New("zones are not allowed")
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("trusted proxies[%d] %q: %w", i, s, err))
			continue
		}
		out = append(out, normalPrefix(p))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// normalPrefix masks p and turns an IPv4-mapped prefix (::ffff:10.0.0.0/104)
// into its IPv4 form, because addresses are unmapped before they are matched.
func normalPrefix(p netip.Prefix) netip.Prefix {
	a := p.Addr()
	if a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

func trustedAddr(trusted []netip.Prefix, a netip.Addr) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
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
	peer := parseHostPort(r.RemoteAddr)
	if !peer.IsValid() || len(trusted) == 0 || !trustedAddr(trusted, peer) {
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
		var buf [16]hop
		var hops []hop
		switch http.CanonicalHeaderKey(name) {
		case HeaderForwarded:
			hops = parseForwarded(buf[:0], vals)
		case HeaderXRealIP:
			hops = append(buf[:0], parseHop(strings.TrimSpace(vals[len(vals)-1])))
		default: // X-Forwarded-For and look-alikes (X-Client-IP chains)
			hops = parseXFF(buf[:0], vals)
		}
		return walk(hop{addr: peer, ok: true, text: r.RemoteAddr}, trusted, hops)
	}
	return peer, r.RemoteAddr
}

// ResolveForwardedFor is ClientIP for transports other than HTTP/1 headers
// (gRPC metadata): peer is the connection's address, values the
// X-Forwarded-For values in the order received.
func ResolveForwardedFor(peer netip.Addr, trusted []netip.Prefix, values []string) netip.Addr {
	peer = peer.Unmap()
	if !peer.IsValid() || len(values) == 0 || !trustedAddr(trusted, peer) {
		return peer
	}
	var buf [16]hop
	a, _ := walk(hop{addr: peer, ok: true}, trusted, parseXFF(buf[:0], values))
	return a
}

// hop is one address of a forwarding chain; !ok marks a hop that is
// malformed, obfuscated or unknown.
type hop struct {
	addr netip.Addr
	ok   bool
	text string // where addr was read from, for addrString
}

// walk returns the right-most untrusted hop, or the last trusted one reached.
func walk(peer hop, trusted []netip.Prefix, hops []hop) (netip.Addr, string) {
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		h := hops[i]
		if !h.ok {
			break // the nearest address a trusted proxy vouched for
		}
		client = h
		if !trustedAddr(trusted, h.addr) {
			break
		}
	}
	return client.addr, client.text
}

// parseXFF appends the hops of X-Forwarded-For values, left to right. Every
// element must be an address, optionally with a port or in brackets; an empty
// element is malformed.
func parseXFF(hops []hop, vals []string) []hop {
	for _, v := range vals {
		for {
			elem, rest, more := strings.Cut(v, ",")
			hops = append(hops, parseHop(strings.TrimSpace(elem)))
			if !more {
				break
			}
			v = rest
		}
	}
	return hops
}

// parseHop parses "192.0.2.1", "192.0.2.1:80", "2001:db8::1", "[2001:db8::1]"
// or "[2001:db8::1]:80". Zones are refused: a header cannot name our interfaces.
func parseHop(s string) hop {
	a := parseHostPort(s)
	return hop{addr: a, ok: a.IsValid(), text: s}
}

// parseHostPort parses an address with or without a port, as found in
// RemoteAddr and forwarding headers, and returns it unmapped (IPv4-mapped
// IPv6 becomes IPv4). It returns the zero Addr for anything else.
func parseHostPort(s string) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}
		}
		if tail := s[end+1:]; tail != "" && !validPort(tail) {
			return netip.Addr{}
		}
		a, err := netip.ParseAddr(s[1:end])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return netip.Addr{}
		}
		return a.Unmap()
	}
	host := s
	if i := strings.IndexByte(s, ':'); i >= 0 && strings.IndexByte(s[i+1:], ':') < 0 {
		// exactly one colon: IPv4 with a port
		if !validPort(s[i:]) {
			return netip.Addr{}
		}
		host = s[:i]
	}
	a, err := netip.ParseAddr(host)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}
	}
	return a.Unmap()
}

// validPort reports whether s is ":" followed by 1 to 5 digits.
func validPort(s string) bool {
	if len(s) < 2 || len(s) > 6 || s[0] != ':' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
