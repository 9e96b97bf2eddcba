package flowhttp

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/internal/forwarded"
)

func mustPrefixes(t testing.TB, s ...string) []netip.Prefix {
	t.Helper()
	p, err := ParseTrustedProxies(s...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies("10.0.0.0/8", " 192.0.2.7 ", "2001:db8::/32", "::ffff:172.16.0.0/108", "10.1.2.3/8")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32", "172.16.0.0/12", "10.0.0.0/8"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("prefix %d = %s, want %s", i, got[i], want[i])
		}
	}
	_, err = ParseTrustedProxies("10.0.0.0/8", "nonsense", "fe80::1%eth0", "1.2.3.4/33")
	if err == nil {
		t.Fatal("bad prefixes accepted")
	}
	for _, frag := range []string{`trusted proxies[1] "nonsense"`, `trusted proxies[2] "fe80::1%eth0"`, `trusted proxies[3] "1.2.3.4/33"`} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error %q does not name %s", err, frag)
		}
	}
	if strings.Contains(err.Error(), "[0]") {
		t.Errorf("error %q blames a good entry", err)
	}
}

func TestParseHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":            "192.0.2.1",
		"192.0.2.1:8080":       "192.0.2.1",
		"[2001:db8::1]:443":    "2001:db8::1",
		"[2001:db8::1]":        "2001:db8::1",
		"2001:db8::1":          "2001:db8::1",
		"::1":                  "::1",
		"[::ffff:192.0.2.9]:1": "192.0.2.9",
		"::ffff:192.0.2.9":     "192.0.2.9",
		"":                     "invalid IP",
		"192.0.2.1:":           "invalid IP",
		"192.0.2.1:80a":        "invalid IP",
		"192.0.2.1:1234567":    "invalid IP",
		"[192.0.2.1]:80":       "invalid IP",
		"[2001:db8::1":         "invalid IP",
		"[2001:db8::1]x":       "invalid IP",
		"[fe80::1%eth0]:80":    "fe80::1",
		"fe80::1%eth0":         "fe80::1",
		"example.com":          "invalid IP",
		"example.com:80":       "invalid IP",
		"unknown":              "invalid IP",
		"@":                    "invalid IP",
		"1.2.3.4.5":            "invalid IP",
	} {
		if got := forwarded.ParseHostPort(in).String(); got != want {
			t.Errorf("ParseHostPort(%q) = %s, want %s", in, got, want)
		}
	}
}

// clientIPCase is one request as a proxy chain would deliver it.
type clientIPCase struct {
	name    string
	remote  string
	headers map[string][]string
	want    string // "" for no address
}

func runClientIP(t *testing.T, trusted []netip.Prefix, names []string, cases []clientIPCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.remote
			for k, vs := range tc.headers {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			a := ClientIP(r, trusted, names)
			got := ""
			if a.IsValid() {
				got = a.String()
			}
			if got != tc.want {
				t.Fatalf("ClientIP = %q, want %q (headers %v)", got, tc.want, tc.headers)
			}
		})
	}
}

type hdr = map[string][]string

func TestClientIPUntrustedPeerIgnoresHeaders(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8")
	runClientIP(t, trusted, nil, []clientIPCase{
		{"spoofed xff", "203.0.113.9:5000", hdr{"X-Forwarded-For": {"1.1.1.1"}}, "203.0.113.9"},
		{"spoofed forwarded", "203.0.113.9:5000", hdr{"Forwarded": {"for=1.1.1.1"}}, "203.0.113.9"},
		{"spoofed x-real-ip", "203.0.113.9:5000", hdr{"X-Real-Ip": {"1.1.1.1"}}, "203.0.113.9"},
		{"ipv6 peer", "[2001:db8::7]:5000", hdr{"X-Forwarded-For": {"1.1.1.1"}}, "2001:db8::7"},
		{"unix socket", "@", nil, ""},
		{"empty remote", "", hdr{"X-Forwarded-For": {"1.1.1.1"}}, ""},
	})
	// No trusted proxies at all: even a private peer is the client.
	runClientIP(t, nil, nil, []clientIPCase{
		{"no trust list", "10.0.0.1:5000", hdr{"X-Forwarded-For": {"1.1.1.1"}}, "10.0.0.1"},
	})
}

func TestClientIPTrustedPeer(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8", "2001:db8:ffff::/48")
	runClientIP(t, trusted, nil, []clientIPCase{
		{"no header", "10.0.0.1:5000", nil, "10.0.0.1"},
		{"xff one hop", "10.0.0.1:5000", hdr{"X-Forwarded-For": {"198.51.100.4"}}, "198.51.100.4"},
		{"xff client-supplied prefix is skipped", "10.0.0.1:5000",
			hdr{"X-Forwarded-For": {"1.1.1.1, 198.51.100.4"}}, "198.51.100.4"},
		{"xff through two proxies", "10.0.0.1:5000",
			hdr{"X-Forwarded-For": {"1.1.1.1, 198.51.100.4, 10.9.9.9"}}, "198.51.100.4"},
		{"xff split across lines", "10.0.0.1:5000",
			hdr{"X-Forwarded-For": {"1.1.1.1, 198.51.100.4", "10.9.9.9"}}, "198.51.100.4"},
		{"xff all trusted: left-most", "10.0.0.1:5000",
			hdr{"X-Forwarded-For": {"10.1.1.1, 10.2.2.2"}}, "10.1.1.1"},
		{"xff with ports and brackets", "10.0.0.1:5000",
			hdr{"X-Forwarded-For": {"[2001:db8::5]:1234, 10.2.2.2:80"}}, "2001:db8::5"},
		{"xff ipv4-mapped", "10.0.0.1:5000", hdr{"X-Forwarded-For": {"::ffff:198.51.100.4"}}, "198.51.100.4"},
		{"trusted ipv6 peer", "[2001:db8:ffff::1]:5000", hdr{"X-Forwarded-For": {"2001:db8::9"}}, "2001:db8::9"},
		{"ipv4-mapped peer is trusted", "[::ffff:10.0.0.1]:5000", hdr{"X-Forwarded-For": {"198.51.100.4"}}, "198.51.100.4"},
		{"x-real-ip", "10.0.0.1:5000", hdr{"X-Real-Ip": {"198.51.100.4"}}, "198.51.100.4"},
		{"forwarded", "10.0.0.1:5000", hdr{"Forwarded": {`for=198.51.100.4;proto=https;by=10.0.0.1`}}, "198.51.100.4"},
		{"forwarded ipv6 quoted with port", "10.0.0.1:5000",
			hdr{"Forwarded": {`for="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::17"},
		{"forwarded ipv4 quoted with port", "10.0.0.1:5000", hdr{"Forwarded": {`For="198.51.100.4:80"`}}, "198.51.100.4"},
		{"forwarded obfuscated port", "10.0.0.1:5000", hdr{"Forwarded": {`for="198.51.100.4:_p1"`}}, "198.51.100.4"},
		{"forwarded chain", "10.0.0.1:5000",
			hdr{"Forwarded": {`for=1.1.1.1, for=198.51.100.4;proto=http`, `for=10.3.3.3`}}, "198.51.100.4"},
		{"forwarded empty element ignored", "10.0.0.1:5000",
			hdr{"Forwarded": {`for=198.51.100.4, , for=10.3.3.3`}}, "198.51.100.4"},
		{"forwarded preferred over xff", "10.0.0.1:5000",
			hdr{"Forwarded": {`for=198.51.100.4`}, "X-Forwarded-For": {"1.1.1.1"}}, "198.51.100.4"},
		{"xff preferred over x-real-ip", "10.0.0.1:5000",
			hdr{"X-Forwarded-For": {"198.51.100.4"}, "X-Real-Ip": {"1.1.1.1"}}, "198.51.100.4"},
	})
}

func TestClientIPProxyHeadersOption(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8")
	// The proxy writes only X-Forwarded-For: a client-supplied Forwarded
	// passes through it untouched and must not be believed.
	runClientIP(t, trusted, []string{"X-Forwarded-For"}, []clientIPCase{
		{"forwarded ignored", "10.0.0.1:5000",
			hdr{"Forwarded": {"for=1.1.1.1"}, "X-Forwarded-For": {"198.51.100.4"}}, "198.51.100.4"},
		{"only forwarded: peer", "10.0.0.1:5000", hdr{"Forwarded": {"for=1.1.1.1"}}, "10.0.0.1"},
	})
}

// Malformed forwarding headers never panic and never become the identity:
// the walk stops at the last address a trusted proxy vouched for.
func TestClientIPMalformed(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8")
	const peer = "10.0.0.1:5000"
	xff := func(v ...string) hdr { return hdr{"X-Forwarded-For": v} }
	fwd := func(v ...string) hdr { return hdr{"Forwarded": v} }
	runClientIP(t, trusted, nil, []clientIPCase{
		{"xff garbage", peer, xff("not-an-ip"), "10.0.0.1"},
		{"xff hostname", peer, xff("evil.example"), "10.0.0.1"},
		{"xff empty value", peer, xff(""), "10.0.0.1"},
		{"xff empty element", peer, xff("198.51.100.4,,10.2.2.2"), "10.2.2.2"},
		{"xff trailing comma", peer, xff("198.51.100.4,"), "10.0.0.1"},
		{"xff garbage right of trusted", peer, xff("198.51.100.4, 10.2.2.2, junk"), "10.0.0.1"},
		{"xff garbage left of client", peer, xff("junk, 198.51.100.4"), "198.51.100.4"},
		{"xff zone dropped", peer, xff("fe80::1%eth0"), "fe80::1"},
		{"xff bad port", peer, xff("198.51.100.4:99999999"), "10.0.0.1"},
		{"xff unclosed bracket", peer, xff("[2001:db8::1"), "10.0.0.1"},
		{"xff unknown", peer, xff("unknown"), "10.0.0.1"},
		{"xff huge", peer, xff(strings.Repeat("1.", 5000)), "10.0.0.1"},
		{"xff many hops", peer, xff(strings.Repeat("10.1.1.1, ", 40) + "198.51.100.4"), "198.51.100.4"},
		{"xff nul", peer, xff("198.51.100.4\x00"), "10.0.0.1"},
		{"x-real-ip garbage", peer, hdr{"X-Real-Ip": {"1.1.1.1, 2.2.2.2"}}, "10.0.0.1"},
		{"forwarded unknown", peer, fwd("for=unknown"), "10.0.0.1"},
		{"forwarded obfuscated", peer, fwd("for=_hidden"), "10.0.0.1"},
		{"forwarded obfuscated quoted", peer, fwd(`for="_gazonk"`), "10.0.0.1"},
		{"forwarded unknown right of client", peer, fwd("for=198.51.100.4, for=unknown"), "10.0.0.1"},
		{"forwarded bare ipv6", peer, fwd(`for="2001:db8::1"`), "10.0.0.1"},
		{"forwarded unquoted ipv6", peer, fwd(`for=[2001:db8::1]`), "10.0.0.1"},
		{"forwarded unquoted port", peer, fwd(`for=198.51.100.4:80`), "10.0.0.1"},
		{"forwarded bracketed ipv4", peer, fwd(`for="[198.51.100.4]"`), "10.0.0.1"},
		{"forwarded unterminated quote", peer, fwd(`for="198.51.100.4`), "10.0.0.1"},
		{"forwarded escape", peer, fwd(`for="198.51.100.4\\"`), "10.0.0.1"},
		{"forwarded no for", peer, fwd("proto=https;by=10.0.0.1"), "10.0.0.1"},
		{"forwarded two fors", peer, fwd("for=198.51.100.4;for=198.51.100.5"), "10.0.0.1"},
		{"forwarded empty for", peer, fwd("for="), "10.0.0.1"},
		{"forwarded no equals", peer, fwd("for"), "10.0.0.1"},
		{"forwarded junk after value", peer, fwd("for=198.51.100.4 x"), "10.0.0.1"},
		{"forwarded bad port", peer, fwd(`for="198.51.100.4:x"`), "10.0.0.1"},
		{"forwarded quoted comma", peer, fwd(`for="1.1.1.1,2.2.2.2"`), "10.0.0.1"},
		{"forwarded malformed left of client", peer, fwd(`for="oops, for=198.51.100.4`), "10.0.0.1"},
		{"forwarded good after malformed element", peer, fwd(`for=junk!, for=198.51.100.4`), "198.51.100.4"},
		{"forwarded only separators", peer, fwd(";;,;, ;"), "10.0.0.1"},
	})
}

func TestResolveForwardedFor(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8")
	for _, tc := range []struct {
		peer string
		vals []string
		want string
	}{
		{"10.0.0.1", []string{"198.51.100.4"}, "198.51.100.4"},
		{"203.0.113.9", []string{"198.51.100.4"}, "203.0.113.9"},
		{"10.0.0.1", []string{"1.1.1.1, 198.51.100.4", "10.2.2.2"}, "198.51.100.4"},
		{"10.0.0.1", []string{"junk"}, "10.0.0.1"},
		{"10.0.0.1", nil, "10.0.0.1"},
		{"::ffff:10.0.0.1", []string{"198.51.100.4"}, "198.51.100.4"},
	} {
		peer := netip.MustParseAddr(tc.peer)
		if got := ResolveForwardedFor(peer, trusted, tc.vals).String(); got != tc.want {
			t.Errorf("ResolveForwardedFor(%s, %q) = %s, want %s", tc.peer, tc.vals, got, tc.want)
		}
	}
	if got := ResolveForwardedFor(netip.Addr{}, trusted, []string{"198.51.100.4"}); got.IsValid() {
		t.Errorf("no peer: got %s, want the zero Addr", got)
	}
}

func TestAddrString(t *testing.T) {
	for _, tc := range []struct{ addr, remote, want string }{
		{"192.0.2.1", "192.0.2.1:80", "192.0.2.1"},
		{"2001:db8::1", "[2001:db8::1]:80", "2001:db8::1"},
		{"192.0.2.1", "[::ffff:192.0.2.1]:80", "192.0.2.1"},
		{"198.51.100.4", "10.0.0.1:80", "198.51.100.4"},
	} {
		if got := addrString(netip.MustParseAddr(tc.addr), tc.remote); got != tc.want {
			t.Errorf("addrString(%s, %s) = %q, want %q", tc.addr, tc.remote, got, tc.want)
		}
	}
	if got := addrString(netip.Addr{}, "@"); got != "" {
		t.Errorf("invalid addr = %q, want empty", got)
	}
	a := netip.MustParseAddr("192.0.2.1")
	if n := testing.AllocsPerRun(100, func() { _ = addrString(a, "192.0.2.1:80") }); n != 0 {
		t.Errorf("addrString allocates %v times for the peer's own text, want 0", n)
	}
}

// FuzzClientIP checks that no header makes ClientIP panic, and that the
// answer is always the peer or an address written in the header.
func FuzzClientIP(f *testing.F) {
	for _, s := range []string{"198.51.100.4", `for="[2001:db8::1]:80";proto=https, for=unknown`,
		"1.1.1.1, 10.0.0.2", `for="_x`, `,;,"\`, "[::1]:1"} {
		f.Add(s, s)
	}
	trusted := mustPrefixes(f, "10.0.0.0/8")
	f.Fuzz(func(t *testing.T, xff, fwd string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "10.0.0.1:5000"
		r.Header["X-Forwarded-For"] = []string{xff}
		a := ClientIP(r, trusted, []string{HeaderXForwardedFor})
		found := a == netip.MustParseAddr("10.0.0.1")
		for _, elem := range strings.Split(xff, ",") {
			found = found || forwarded.ParseHostPort(strings.TrimSpace(elem)) == a
		}
		if !found {
			t.Fatalf("X-Forwarded-For %q gave %s, neither the peer nor one of its elements", xff, a)
		}
		r.Header["Forwarded"] = []string{fwd}
		_ = ClientIP(r, trusted, nil)
	})
}
