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

// TestPriorityMetadata: as flowhttp's header test, through the unary
// interceptor with the peer and metadata a gRPC server gives a handler.
func TestPriorityMetadata(t *testing.T) {
	eng := newEngine(t, clock.NewFake(epoch), flow.Rule{ID: "c", Resource: checkMethod, Algorithm: flow.AlgoConcurrency, Limit: 2})
	held, err := eng.Entry(checkMethod)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Exit()
	proxies := WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8"))
	call := func(opts []Option, from string, md metadata.MD) codes.Code {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(from), Port: 5000}})
		ctx = metadata.NewIncomingContext(ctx, md)
		_, err := UnaryServerInterceptor(eng, opts...)(ctx, nil, &grpc.UnaryServerInfo{FullMethod: checkMethod},
			func(context.Context, any) (any, error) { return "ok", nil })
		return status.Code(err)
	}
	low := metadata.Pairs("x-priority", "low")
	cases := []struct {
		name string
		opts []Option
		from string
		md   metadata.MD
		want codes.Code
	}{
		{"untrusted peer: ignored", []Option{proxies}, "192.0.2.1", low, codes.OK},
		{"trusted proxy: believed", []Option{proxies}, "10.1.2.3", low, codes.ResourceExhausted},
		{"any peer when trusted by option", []Option{WithTrustPriority(true)}, "192.0.2.1", low, codes.ResourceExhausted},
		{"custom key", []Option{WithTrustPriority(true), WithPriorityMetadata("X-Class")}, "192.0.2.1", metadata.Pairs("x-class", "low"), codes.ResourceExhausted},
		{"critical passes", []Option{WithTrustPriority(true)}, "192.0.2.1", metadata.Pairs("x-priority", "critical"), codes.OK},
	}
	for _, c := range cases {
		if got := call(c.opts, c.from, c.md); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
