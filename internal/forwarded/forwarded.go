package forwarded

import (
	"net/netip"
	"strings"
)

// ParseForwarded appends the "for" hops of RFC 7239 Forwarded values, left
// to right. Each element yields one hop; an element without a usable "for"
// (absent, repeated, "unknown", obfuscated "_x", bad syntax) yields a
// malformed hop, and an empty element is skipped as RFC 9110's list rule asks.
// IPv6 must be in brackets and quoted, as the RFC requires.
func ParseForwarded(hops []Hop, vals []string) []Hop {
	for _, v := range vals {
		i := 0
		for {
			var forVal string
			pairs, fors, bad := 0, 0, false
			for !bad {
				i = skipOWS(v, i)
				if i < len(v) && v[i] == ';' {
					i++
					continue
				}
				if i >= len(v) || v[i] == ',' {
					break
				}
				start := i
				for i < len(v) && isTchar(v[i]) {
					i++
				}
				key := v[start:i]
				if key == "" || i >= len(v) || v[i] != '=' {
					bad = true
					break
				}
				i++
				var val string
				var ok bool
				if val, i, ok = forwardedValue(v, i); !ok {
					bad = true
					break
				}
				pairs++
				if strings.EqualFold(key, "for") {
					fors++
					forVal = val
				}
				i = skipOWS(v, i)
				if i < len(v) && v[i] != ';' && v[i] != ',' {
					bad = true
				}
			}
			if bad {
				i = skipElement(v, i)
			}
			if pairs > 0 || bad {
				h := Hop{}
				if !bad && fors == 1 {
					h = forwardedNode(forVal)
				}
				hops = append(hops, h)
			}
			if i >= len(v) {
				break
			}
			i++ // the comma
		}
	}
	return hops
}

// forwardedValue reads a token or a quoted-string at v[i:]. Quoted values
// holding a backslash escape are refused: no node name needs one.
func forwardedValue(v string, i int) (val string, next int, ok bool) {
	if i < len(v) && v[i] == '"' {
		end := strings.IndexByte(v[i+1:], '"')
		if end < 0 {
			return "", len(v), false
		}
		val = v[i+1 : i+1+end]
		return val, i + end + 2, !strings.Contains(val, `\`)
	}
	start := i
	for i < len(v) && isTchar(v[i]) {
		i++
	}
	return v[start:i], i, i > start
}

// forwardedNode parses a node: IPv4 or "[IPv6]", each with an optional port
// or obfuscated port. "unknown" and obfuscated names are not addresses.
func forwardedNode(s string) Hop {
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return Hop{}
		}
		host, port = s[1:end], s[end+1:]
		if port != "" && port[0] != ':' {
			return Hop{}
		}
	} else if i := strings.IndexByte(s, ':'); i >= 0 {
		host, port = s[:i], s[i:]
	}
	if port != "" && !validPort(port) && !validObfPort(port) {
		return Hop{}
	}
	a, err := netip.ParseAddr(host)
	if err != nil || a.Is6() != strings.HasPrefix(s, "[") {
		// covers "unknown", "_hidden", a bare IPv6, and IPv4 in brackets
		return Hop{}
	}
	return Hop{Addr: Normal(a), OK: true, Text: s}
}

// validObfPort reports whether s is ":" followed by an obfport ("_" and
// letters, digits, ".", "_" or "-").
func validObfPort(s string) bool {
	if len(s) < 3 || s[1] != '_' {
		return false
	}
	for i := 2; i < len(s); i++ {
		c := s[i]
		if !(isAlnum(c) || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// skipElement moves past the rest of a malformed element, honouring quotes,
// and stops at the comma that ends it (or the end).
func skipElement(v string, i int) int {
	inQuote := false
	for ; i < len(v); i++ {
		switch c := v[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case c == ',' && !inQuote:
			return i
		}
	}
	return i
}

func skipOWS(v string, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
		i++
	}
	return i
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// isTchar reports whether c may appear in an RFC 9110 token.
func isTchar(c byte) bool {
	return isAlnum(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
