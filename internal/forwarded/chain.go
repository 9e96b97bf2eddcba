// Package forwarded owns the reading of forwarding chains (X-Forwarded-For,
// RFC 7239 Forwarded) behind trusted proxies, shared by the HTTP middleware
// (flowhttp) and the gRPC interceptors (flowgrpc) so that neither imports
// the other.
package forwarded

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ParseTrusted parses CIDR prefixes ("10.0.0.0/8") and single
// addresses ("192.0.2.7", taken as /32 or /128) as trusted proxies. It
// reports every bad entry, each prefixed with its index.
func ParseTrusted(cidrs ...string) ([]netip.Prefix, error) {
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
		out = append(out, NormalPrefix(p))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// NormalPrefix masks p and turns an IPv4-mapped prefix (::ffff:10.0.0.0/104)
// into its IPv4 form, because addresses are unmapped before they are matched.
func NormalPrefix(p netip.Prefix) netip.Prefix {
	a := p.Addr()
	if a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// Trusted reports whether a is in one of the trusted prefixes.
func Trusted(trusted []netip.Prefix, a netip.Addr) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Resolve is the client address behind peer for transports that carry
// X-Forwarded-For values outside HTTP headers (gRPC metadata): peer is the
// connection's address, values the X-Forwarded-For values in the order
// received. The walk is flowhttp.ClientIP's.
func Resolve(peer netip.Addr, trusted []netip.Prefix, values []string) netip.Addr {
	peer = Normal(peer)
	if !peer.IsValid() || len(values) == 0 || !Trusted(trusted, peer) {
		return peer
	}
	var buf [16]Hop
	a, _ := Walk(Hop{Addr: peer, OK: true}, trusted, ParseXFF(buf[:0], values))
	return a
}

// Hop is one address of a forwarding chain; !OK marks a hop that is
// malformed, obfuscated or unknown.
type Hop struct {
	Addr netip.Addr
	OK   bool
	Text string // where Addr was read from, so a caller can reuse the text
}

// Walk returns the right-most untrusted hop, or the last trusted one reached.
func Walk(peer Hop, trusted []netip.Prefix, hops []Hop) (netip.Addr, string) {
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		h := hops[i]
		if !h.OK {
			break // the nearest address a trusted proxy vouched for
		}
		client = h
		if !Trusted(trusted, h.Addr) {
			break
		}
	}
	return client.Addr, client.Text
}

// ParseXFF appends the hops of X-Forwarded-For values, left to right. Every
// element must be an address, optionally with a port or in brackets; an empty
// element is malformed.
func ParseXFF(hops []Hop, vals []string) []Hop {
	for _, v := range vals {
		for {
			elem, rest, more := strings.Cut(v, ",")
			hops = append(hops, ParseHop(strings.TrimSpace(elem)))
			if !more {
				break
			}
			v = rest
		}
	}
	return hops
}

// ParseHop parses "192.0.2.1", "192.0.2.1:80", "2001:db8::1", "[2001:db8::1]"
// or "[2001:db8::1]:80"; a zone is dropped (see ParseHostPort).
func ParseHop(s string) Hop {
	a := ParseHostPort(s)
	return Hop{Addr: a, OK: a.IsValid(), Text: s}
}

// ParseHostPort parses an address with or without a port, as found in
// RemoteAddr and forwarding headers, and returns it unmapped (IPv4-mapped
// IPv6 becomes IPv4) and without its zone. It returns the zero Addr for
// anything else.
//
// net/http writes a link-local peer as "[fe80::1%eth0]:port". The zone
// names an interface of the host that saw the peer, not the peer; kept, it
// would make the address match no prefix (netip never matches a zoned
// address), so deny lists and per-IP limits would pass the peer by.
func ParseHostPort(s string) netip.Addr {
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
		if err != nil || !a.Is6() {
			return netip.Addr{}
		}
		return Normal(a)
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
	if err != nil {
		return netip.Addr{}
	}
	return Normal(a)
}

// Normal is a as client addresses are compared: without its IPv6 zone and
// unmapped (IPv4-mapped IPv6 becomes IPv4).
func Normal(a netip.Addr) netip.Addr { return a.WithZone("").Unmap() }

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
