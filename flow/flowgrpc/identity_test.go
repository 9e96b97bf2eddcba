package flowgrpc

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/flowgate/flowgate/clock"
	"github.com/flowgate/flowgate/flow"
)

type strAddr string

func (a strAddr) Network() string { return "test" }
func (a strAddr) String() string  { return string(a) }

func callCtx(p net.Addr, xff ...string) context.Context {
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: p})
	if len(xff) > 0 {
		md := metadata.MD{}
		for _, v := range xff {
			md.Append(MetadataForwardedFor, v)
		}
		ctx = metadata.NewIncomingContext(ctx, md)
	}
	return ctx
}

func tcp(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }

func TestClientIP(t *testing.T) {
	trusted, err := ParseTrustedProxies("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no peer", context.Background(), "invalid IP"},
		{"tcp peer", callCtx(tcp("203.0.113.9:5000")), "203.0.113.9"},
		{"mapped peer", callCtx(tcp("[::ffff:203.0.113.9]:5000")), "203.0.113.9"},
		{"ipv6 peer", callCtx(tcp("[2001:db8::1]:5000")), "2001:db8::1"},
		{"bufconn", callCtx(strAddr("bufconn")), "invalid IP"},
		{"string addr", callCtx(strAddr("198.51.100.7:1")), "198.51.100.7"},
		{"spoof from untrusted", callCtx(tcp("203.0.113.9:5000"), "1.1.1.1"), "203.0.113.9"},
		{"xff from trusted", callCtx(tcp("10.0.0.1:5000"), "6.6.6.6, 198.51.100.4"), "198.51.100.4"},
		{"xff split values", callCtx(tcp("10.0.0.1:5000"), "198.51.100.4", "10.2.2.2"), "198.51.100.4"},
		{"malformed from trusted", callCtx(tcp("10.0.0.1:5000"), "junk"), "10.0.0.1"},
		{"zoned peer", callCtx(&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 1, Zone: "eth0"}), "fe80::1"},
		{"zoned string peer", callCtx(strAddr("[fe80::1%eth0]:1")), "fe80::1"},
		{"zoned xff from trusted", callCtx(tcp("10.0.0.1:5000"), "fe80::2%eth0"), "fe80::2"},
	} {
		if got := ClientIP(tc.ctx, trusted).String(); got != tc.want {
			t.Errorf("%s: ClientIP = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestServerPerIPLimit(t *testing.T) {
	trusted, _ := ParseTrustedProxies("10.0.0.0/8")
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "per-ip", Resource: checkMethod, Level: flow.LevelIP,
		Algorithm: flow.AlgoFixedWindow, Limit: 1})
	ic := UnaryServerInterceptor(eng, WithTrustedProxies(trusted...))
	info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
	h := func(context.Context, any) (any, error) { return nil, nil }
	for i, tc := range []struct {
		ctx     context.Context
		blocked bool
	}{
		{callCtx(tcp("203.0.113.9:1"), "1.1.1.1"), false},
		{callCtx(tcp("203.0.113.9:2"), "2.2.2.2"), true}, // spoofing does not buy a new quota
		{callCtx(tcp("10.0.0.1:1"), "198.51.100.4"), false},
		{callCtx(tcp("10.0.0.1:1"), "198.51.100.5"), false},
		{callCtx(tcp("10.0.0.2:1"), "198.51.100.4"), true},
	} {
		_, err := ic(tc.ctx, nil, info, h)
		if blocked := err != nil; blocked != tc.blocked {
			t.Errorf("call %d: err %v, want blocked=%v", i, err, tc.blocked)
		}
	}
}

func TestServerIPv6Prefix(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "per-ip", Resource: checkMethod, Level: flow.LevelIP,
		Algorithm: flow.AlgoFixedWindow, Limit: 1})
	ic := UnaryServerInterceptor(eng, WithIPv6Prefix(64))
	info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
	h := func(context.Context, any) (any, error) { return nil, nil }
	for i, tc := range []struct {
		peer    string
		blocked bool
	}{{"[2001:db8:1:2::1]:1", false}, {"[2001:db8:1:2::9]:1", true}, {"[2001:db8:9::1]:1", false}} {
		_, err := ic(callCtx(tcp(tc.peer)), nil, info, h)
		if blocked := err != nil; blocked != tc.blocked {
			t.Errorf("call %d from %s: err %v, want blocked=%v", i, tc.peer, err, tc.blocked)
		}
	}
}

// A link-local peer's zone is dropped, so the IP deny list sees the
// peer's address (a zoned address matches no prefix).
func TestServerZonedPeerMeetsDenyList(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "no-link-local", Resource: checkMethod, Level: flow.LevelIP,
		Algorithm: flow.AlgoDeny, Values: []string{"fe80::/10"}})
	ic := UnaryServerInterceptor(eng)
	info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
	h := func(context.Context, any) (any, error) { return nil, nil }
	zoned := &net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 1, Zone: "eth0"}
	if got := ClientIP(callCtx(zoned), nil); got != netip.MustParseAddr("fe80::1") {
		t.Errorf("ClientIP(%s) = %s, want fe80::1", zoned, got)
	}
	if _, err := ic(callCtx(zoned), nil, info, h); status.Code(err) != codes.PermissionDenied {
		t.Errorf("peer %s: err %v, want PermissionDenied", zoned, err)
	}
}
