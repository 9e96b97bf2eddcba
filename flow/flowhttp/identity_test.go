package flowhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

// perIPEngine allows one request per IP per second on "GET /x".
func perIPEngine(t *testing.T) *flow.Engine {
	return newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "per-ip", Resource: "GET /x", Level: flow.LevelIP,
		Algorithm: flow.AlgoFixedWindow, Limit: 1})
}

func TestSpoofedForwardedForIgnoredFromUntrustedPeer(t *testing.T) {
	h := Middleware(perIPEngine(t), WithTrustedProxies(mustPrefixes(t, "10.0.0.0/8")...))(&okHandler{})
	// An attacker rotates X-Forwarded-For to look like many clients.
	for i, xff := range []string{"1.1.1.1", "2.2.2.2", "10.0.0.5", "3.3.3.3, 4.4.4.4"} {
		want := http.StatusTooManyRequests
		if i == 0 {
			want = http.StatusOK
		}
		if w := serve(h, "GET", "/x", "203.0.113.9:4000", http.Header{"X-Forwarded-For": {xff}}); w.Code != want {
			t.Errorf("spoof %q: %d, want %d (the peer is the identity)", xff, w.Code, want)
		}
	}
}

func TestForwardedForHonouredFromTrustedPeer(t *testing.T) {
	h := Middleware(perIPEngine(t), WithTrustedProxies(mustPrefixes(t, "10.0.0.0/8")...))(&okHandler{})
	for i, tc := range []struct {
		remote, xff string
		want        int
	}{
		{"10.0.0.1:4000", "198.51.100.4", 200},
		{"10.0.0.2:4000", "198.51.100.5", 200},                    // another client, another quota
		{"10.0.0.1:4000", "198.51.100.4", 429},                    // the first client again
		{"10.0.0.3:4000", "6.6.6.6, 198.51.100.4, 10.7.7.7", 429}, // same client through two proxies
		{"10.0.0.1:4000", "", 200},                                // no header: the proxy itself
	} {
		var hd http.Header
		if tc.xff != "" {
			hd = http.Header{"X-Forwarded-For": {tc.xff}}
		}
		if w := serve(h, "GET", "/x", tc.remote, hd); w.Code != tc.want {
			t.Errorf("request %d from %s for %q: %d, want %d", i, tc.remote, tc.xff, w.Code, tc.want)
		}
	}
}

// A malformed header from a trusted proxy never becomes the identity: each
// request below counts against the proxy's own address, whose quota the
// first (header-less) request has used up.
func TestMalformedForwardingHeadersFallBackToProxy(t *testing.T) {
	for _, tc := range []struct {
		name, header, value string
	}{
		{"xff garbage", "X-Forwarded-For", "garbage"},
		{"xff empty", "X-Forwarded-For", ""},
		{"xff hostname", "X-Forwarded-For", "client.example"},
		{"xff trailing junk", "X-Forwarded-For", "198.51.100.4, junk"},
		{"xff bad port", "X-Forwarded-For", "198.51.100.4:http"},
		{"x-real-ip list", "X-Real-Ip", "198.51.100.4, 198.51.100.5"},
		{"forwarded unknown", "Forwarded", "for=unknown"},
		{"forwarded obfuscated", "Forwarded", "for=_secret"},
		{"forwarded bare ipv6", "Forwarded", `for="2001:db8::1"`},
		{"forwarded unterminated", "Forwarded", `for="198.51.100.4`},
		{"forwarded no for", "Forwarded", "proto=https"},
		{"forwarded duplicate for", "Forwarded", "for=198.51.100.4;for=198.51.100.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Middleware(perIPEngine(t), WithTrustedProxies(mustPrefixes(t, "10.0.0.0/8")...))(&okHandler{})
			if w := serve(h, "GET", "/x", "10.0.0.1:4000", nil); w.Code != 200 {
				t.Fatalf("proxy's own request: %d", w.Code)
			}
			if w := serve(h, "GET", "/x", "10.0.0.1:4000", http.Header{tc.header: {tc.value}}); w.Code != 429 {
				t.Errorf("%s: %q: %d, want 429 (counted as the proxy 10.0.0.1)", tc.header, tc.value, w.Code)
			}
		})
	}
}

func TestIPOption(t *testing.T) {
	h := Middleware(perIPEngine(t), WithIP(func(r *http.Request) string { return r.Header.Get("X-Test-IP") }))(&okHandler{})
	for i, tc := range []struct {
		ip   string
		want int
	}{{"a", 200}, {"b", 200}, {"a", 429}, {"", 200}, {"", 200}} {
		if w := serve(h, "GET", "/x", peerAddr, http.Header{"X-Test-Ip": {tc.ip}}); w.Code != tc.want {
			t.Errorf("request %d (%q): %d, want %d", i, tc.ip, w.Code, tc.want)
		}
	}
}

func TestIPv6Prefix(t *testing.T) {
	h := Middleware(perIPEngine(t), WithIPv6Prefix(64))(&okHandler{})
	for i, tc := range []struct {
		remote string
		want   int
	}{
		{"[2001:db8:1:2::1]:1", 200},
		{"[2001:db8:1:2:ffff::7]:1", 429}, // same /64
		{"[2001:db8:1:3::1]:1", 200},      // another /64
		{"192.0.2.1:1", 200},
		{"192.0.2.2:1", 200}, // IPv4 keyed by address
	} {
		if w := serve(h, "GET", "/x", tc.remote, nil); w.Code != tc.want {
			t.Errorf("request %d from %s: %d, want %d", i, tc.remote, w.Code, tc.want)
		}
	}
}

// A handler behind the middleware reads the identity the limits counted:
// the client IP after the trusted proxy, and the user; a BlockedHandler
// sees it too, and the request's context keeps its own values and
// cancellation.
func TestIdentityOnRequestContext(t *testing.T) {
	type ctxKey struct{}
	var got []Identity
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := IdentityFrom(r.Context())
		if !ok {
			t.Error("handler: no identity on the request context")
		}
		if r.Context().Value(ctxKey{}) != "kept" {
			t.Error("handler: the request context lost a value set before the middleware")
		}
		got = append(got, id)
	})
	var refused Identity
	h := Middleware(perIPEngine(t),
		WithUser(func(r *http.Request) string { return r.Header.Get("X-User") }),
		WithTrustedProxies(mustPrefixes(t, "10.0.0.0/8")...),
		WithBlockedHandler(func(w http.ResponseWriter, r *http.Request, be *flow.BlockError) {
			refused, _ = IdentityFrom(r.Context())
			WriteProblem(w, r, be)
		}))(next)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "kept"))
	send := func() int {
		r := httptest.NewRequest("GET", "/x", nil).WithContext(ctx)
		r.RemoteAddr = "10.0.0.7:4000"
		r.Header.Set("X-Forwarded-For", "198.51.100.23")
		r.Header.Set("X-User", "u-4711")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := send(); code != http.StatusOK {
		t.Fatalf("first request: %d", code)
	}
	want := Identity{IP: "198.51.100.23", User: "u-4711"}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("handler saw %+v, want [%+v]", got, want)
	}
	if code := send(); code != http.StatusTooManyRequests || refused != want {
		t.Fatalf("second request: %d, blocked handler saw %+v; want 429 and %+v", code, refused, want)
	}
	if _, ok := IdentityFrom(ctx); ok {
		t.Error("IdentityFrom on a context that never went through the middleware: ok")
	}
	// Cancellation still reaches the handler's context.
	var done <-chan struct{}
	h2 := Middleware(newEngine(t, clock.NewFake(epoch)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		done = r.Context().Done()
	}))
	r := httptest.NewRequest("GET", "/y", nil).WithContext(ctx)
	h2.ServeHTTP(httptest.NewRecorder(), r)
	cancel()
	select {
	case <-done:
	default:
		t.Error("cancelling the request's context did not reach the handler's context")
	}
}

// WithIdentityContext(false) leaves the request's context as it was.
func TestIdentityContextOff(t *testing.T) {
	var ok bool
	h := Middleware(newEngine(t, clock.NewFake(epoch)), WithIdentityContext(false))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok = IdentityFrom(r.Context())
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
	if ok {
		t.Error("an identity on the context with WithIdentityContext(false)")
	}
}
